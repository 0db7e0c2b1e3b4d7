// json_log_format: log lines as JSON objects, one a line, for log
// collectors (--log-format json): {"ts","level","logger","pid","thread","msg"}.
#pragma once

#include <memory>

#include <spdlog/formatter.h>

namespace ferry {

class json_log_formatter : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

} // namespace ferry
