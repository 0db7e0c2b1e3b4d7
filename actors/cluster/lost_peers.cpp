#include "actors/cluster/lost_peers.hpp"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace ferry {

namespace {

constexpr std::string_view prefix = "lost:";
constexpr size_t hex_digits = 16;

std::string hex(uint64_t id) {
  char text[hex_digits + 1];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

/// 16 lower- or upper-case hex digits, or none.
std::optional<uint64_t> parse_hex(std::string_view s) {
  if (s.size() != hex_digits)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

bool is_lost_capability(const std::string& c) {
  return c.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

void lost_peers::lost(uint64_t worker_id) {
  std::lock_guard<std::mutex> lock{mx_};
  ids_.erase(std::remove(ids_.begin(), ids_.end(), worker_id), ids_.end());
  ids_.push_back(worker_id);
  while (ids_.size() > max_kept)
    ids_.pop_front();
}

void lost_peers::back(uint64_t worker_id) {
  std::lock_guard<std::mutex> lock{mx_};
  ids_.erase(std::remove(ids_.begin(), ids_.end(), worker_id), ids_.end());
}

bool lost_peers::is_lost(uint64_t worker_id) const {
  std::lock_guard<std::mutex> lock{mx_};
  return std::find(ids_.begin(), ids_.end(), worker_id) != ids_.end();
}

std::optional<std::string> lost_peers::capability() const {
  std::lock_guard<std::mutex> lock{mx_};
  if (ids_.empty())
    return std::nullopt;
  std::string out{prefix};
  for (size_t i = 0; i < ids_.size(); ++i)
    out += (i == 0 ? "" : ",") + hex(ids_[i]);
  return out;
}

std::string lost_capability(uint64_t worker_id) {
  return std::string{prefix} + hex(worker_id);
}

bool says_it_lost(const std::vector<std::string>& capabilities, uint64_t me) {
  for (const auto& c : capabilities) {
    if (!is_lost_capability(c))
      continue;
    std::string_view rest{c};
    rest.remove_prefix(prefix.size());
    while (!rest.empty()) {
      auto comma = rest.find(',');
      auto id = parse_hex(rest.substr(0, comma));
      if (!id)
        return false; // malformed: names nobody
      if (*id == me)
        return true;
      if (comma == std::string_view::npos)
        break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

std::vector<std::string> without_lost(std::vector<std::string> capabilities) {
  capabilities.erase(std::remove_if(capabilities.begin(), capabilities.end(), is_lost_capability),
                     capabilities.end());
  return capabilities;
}

} // namespace ferry
