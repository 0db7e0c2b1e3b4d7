#include "runtime/json_log_format.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include <nlohmann/json.hpp>

namespace ferry {

namespace {

/// RFC 3339 UTC with milliseconds.
std::string utc_timestamp(spdlog::log_clock::time_point t) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count()
            % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03lldZ", static_cast<long long>(ms));
  return buf;
}

} // namespace

void json_log_formatter::format(const spdlog::details::log_msg& msg,
                                spdlog::memory_buf_t& dest) {
  auto level = spdlog::level::to_string_view(msg.level);
  nlohmann::json j{{"ts", utc_timestamp(msg.time)},
                   {"level", std::string(level.data(), level.size())},
                   {"logger", std::string(msg.logger_name.data(), msg.logger_name.size())},
                   {"pid", static_cast<long>(::getpid())},
                   {"thread", msg.thread_id},
                   {"msg", std::string(msg.payload.data(), msg.payload.size())}};
  // Invalid UTF-8 in a message is replaced, never a broken line.
  auto line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> json_log_formatter::clone() const {
  return std::make_unique<json_log_formatter>();
}

} // namespace ferry
