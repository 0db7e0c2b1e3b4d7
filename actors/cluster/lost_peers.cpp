#include "actors/cluster/lost_peers.hpp"

#include <algorithm>
#include <string_view>

#include "protocol/hex64.hpp"

namespace ferry {

namespace {

constexpr std::string_view prefix = "lost:";

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
    out += (i == 0 ? "" : ",") + hex64(ids_[i]);
  return out;
}

std::string lost_capability(uint64_t worker_id) {
  return std::string{prefix} + hex64(worker_id);
}

bool says_it_lost(const std::vector<std::string>& capabilities, uint64_t me) {
  for (const auto& c : capabilities) {
    if (!is_lost_capability(c))
      continue;
    std::string_view rest{c};
    rest.remove_prefix(prefix.size());
    while (!rest.empty()) {
      auto comma = rest.find(',');
      auto id = parse_hex64(rest.substr(0, comma));
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
