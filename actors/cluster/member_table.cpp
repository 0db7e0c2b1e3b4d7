#include "actors/cluster/member_table.hpp"

#include <algorithm>

namespace ferry {

member_table::member_table(std::vector<std::string> join_targets, limits lim)
  : lim_(lim) {
  for (auto& ep : join_targets)
    endpoints_[ep].join_target = true;
}

void member_table::set_self(std::string endpoint) {
  self_endpoints_.insert(endpoint);
  auto i = endpoints_.find(endpoint);
  if (i != endpoints_.end()) {
    if (i->second.join_target)
      i->second.reached_once = true;
    else
      endpoints_.erase(i);
  }
}

bool member_table::learn(const std::string& endpoint, clock::time_point now) {
  if (self_endpoints_.count(endpoint) > 0 || endpoints_.count(endpoint) > 0)
    return false;
  if (endpoints_.size() >= lim_.max_endpoints)
    return false;
  endpoint_state st;
  st.due = now;
  endpoints_.emplace(endpoint, st);
  return true;
}

std::vector<std::string> member_table::take_due(clock::time_point now) {
  std::vector<std::string> due;
  for (auto& [ep, st] : endpoints_) {
    if (st.in_flight || st.member != 0 || self_endpoints_.count(ep) > 0)
      continue;
    if (st.due <= now) {
      st.in_flight = true;
      due.push_back(ep);
    }
  }
  return due;
}

void member_table::dialled(const std::string& endpoint, uint64_t worker_id, bool self) {
  auto i = endpoints_.find(endpoint);
  if (i == endpoints_.end())
    return;
  auto& st = i->second;
  st.in_flight = false;
  st.failures = 0;
  st.rejoining = false;
  st.reached_once = true;
  if (self) {
    self_endpoints_.insert(endpoint);
    if (!st.join_target)
      endpoints_.erase(i);
    return;
  }
  st.member = worker_id;
  member_endpoints_[worker_id].insert(endpoint);
}

void member_table::dial_failed(const std::string& endpoint, clock::time_point now) {
  auto i = endpoints_.find(endpoint);
  if (i == endpoints_.end())
    return;
  auto& st = i->second;
  st.in_flight = false;
  ++st.failures;
  if (!st.join_target
      && st.failures >= (st.rejoining ? lim_.rejoin_attempts : lim_.learned_attempts)) {
    endpoints_.erase(i);
    return;
  }
  st.due = now + backoff(st.failures) + (st.rejoining ? jitter() : std::chrono::milliseconds{0});
}

void member_table::joined(uint64_t worker_id, const std::string& endpoint) {
  if (worker_id == 0 || self_endpoints_.count(endpoint) > 0)
    return;
  auto& st = endpoints_[endpoint];
  st.member = worker_id;
  st.reached_once = true;
  st.failures = 0;
  st.rejoining = false;
  member_endpoints_[worker_id].insert(endpoint);
}

void member_table::left(uint64_t worker_id, clock::time_point now) {
  auto m = member_endpoints_.find(worker_id);
  if (m == member_endpoints_.end())
    return;
  // Its endpoints are dialled again: a join target at once and until
  // reached, a learned one soon (within rejoin_jitter) for rejoin_attempts.
  // A member whose connection was cut (a stall past the heartbeat timeout)
  // lives on, and when neither side is the other's join target nothing
  // else would bring the two together; one that is gone costs those
  // attempts. A member reached through a join target is dialled by that
  // name only.
  bool by_join_target = false;
  for (const auto& ep : m->second) {
    auto i = endpoints_.find(ep);
    by_join_target |= i != endpoints_.end() && i->second.member == worker_id
                      && i->second.join_target;
  }
  for (const auto& ep : m->second) {
    auto i = endpoints_.find(ep);
    if (i == endpoints_.end() || i->second.member != worker_id)
      continue;
    if (by_join_target && !i->second.join_target && !i->second.in_flight) {
      endpoints_.erase(i);
      continue;
    }
    auto& st = i->second;
    st.member = 0;
    st.failures = 0;
    st.rejoining = !st.join_target;
    st.due = st.join_target ? now : now + jitter();
  }
  member_endpoints_.erase(m);
}

bool member_table::ready() const {
  return std::all_of(endpoints_.begin(), endpoints_.end(), [](const auto& kv) {
    return !kv.second.join_target || kv.second.reached_once;
  });
}

std::optional<member_table::clock::time_point> member_table::next_due() const {
  std::optional<clock::time_point> next;
  for (const auto& [ep, st] : endpoints_) {
    if (st.in_flight || st.member != 0 || self_endpoints_.count(ep) > 0)
      continue;
    if (!next || st.due < *next)
      next = st.due;
  }
  return next;
}

std::vector<std::string> member_table::unreached() const {
  std::vector<std::string> out;
  for (const auto& [ep, st] : endpoints_)
    if (st.join_target && !st.reached_once)
      out.push_back(ep);
  return out;
}

std::chrono::milliseconds member_table::jitter() {
  if (lim_.rejoin_jitter.count() <= 0)
    return std::chrono::milliseconds{0};
  std::uniform_int_distribution<int64_t> d{0, lim_.rejoin_jitter.count()};
  return std::chrono::milliseconds{d(rng_)};
}

std::chrono::milliseconds member_table::backoff(uint32_t failures) const {
  auto d = lim_.first_retry;
  for (uint32_t i = 1; i < failures && d < lim_.max_retry; ++i)
    d *= 2;
  return std::min(d, lim_.max_retry);
}

} // namespace ferry
