#include "rdma/endpoint_activity.hpp"

#include <algorithm>

namespace ferry {

endpoint_activity::endpoint_activity(std::optional<std::chrono::milliseconds> idle_timeout) {
  if (idle_timeout)
    timeout_ = std::max(*idle_timeout, idle_timeout_floor);
  next_scan_ = clock_type::now() + scan_period();
}

std::chrono::milliseconds endpoint_activity::timeout() const {
  return timeout_ ? *timeout_ : std::chrono::milliseconds{0};
}

std::chrono::milliseconds endpoint_activity::scan_period() const {
  if (!timeout_)
    return longest_scan_period;
  return std::min(*timeout_ / 2, longest_scan_period);
}

void endpoint_activity::opened(uint64_t peer, time_point now) {
  eps_[peer] = entry{now, 0, false};
}

void endpoint_activity::started(uint64_t peer, time_point now) {
  auto i = eps_.find(peer);
  if (i == eps_.end())
    return;
  ++i->second.outstanding;
  i->second.last_use = std::max(i->second.last_use, now);
}

void endpoint_activity::finished(uint64_t peer, time_point now) {
  auto i = eps_.find(peer);
  if (i == eps_.end())
    return;
  if (i->second.outstanding > 0)
    --i->second.outstanding;
  i->second.last_use = std::max(i->second.last_use, now);
}

void endpoint_activity::closed(uint64_t peer) {
  eps_.erase(peer);
}

bool endpoint_activity::goodbye(uint64_t peer) {
  auto i = eps_.find(peer);
  if (i == eps_.end())
    return false; // nothing of ours to close
  if (i->second.outstanding == 0)
    return true;
  i->second.goodbye = true;
  return false;
}

std::vector<uint64_t> endpoint_activity::goodbye_ready() const {
  std::vector<uint64_t> out;
  for (const auto& [peer, e] : eps_)
    if (e.goodbye && e.outstanding == 0)
      out.push_back(peer);
  return out;
}

std::vector<uint64_t> endpoint_activity::scan(time_point now, bool blocked) {
  std::vector<uint64_t> out;
  if (!timeout_)
    return out;
  next_scan_ = now + scan_period();
  if (blocked)
    return out;
  for (const auto& [peer, e] : eps_)
    if (e.outstanding == 0 && now - e.last_use >= *timeout_)
      out.push_back(peer);
  return out;
}

size_t endpoint_activity::outstanding(uint64_t peer) const {
  auto i = eps_.find(peer);
  return i == eps_.end() ? 0 : i->second.outstanding;
}

} // namespace ferry
