#include "actors/rendezvous/deferred_holds.hpp"

namespace ferry {

void deferred_holds::add(entry e) {
  key k{e.handle, e.lease_id};
  cancel(e.handle, e.lease_id); // a repeat replaces it
  by_due_.emplace(e.due, k);
  by_lease_.emplace(k, std::move(e));
}

bool deferred_holds::cancel(const data_handle& h, uint64_t lease_id) {
  auto i = by_lease_.find(key{h, lease_id});
  if (i == by_lease_.end())
    return false;
  by_due_.erase(due_key{i->second.due, i->first});
  by_lease_.erase(i);
  return true;
}

std::vector<deferred_holds::entry>
deferred_holds::take_due(clock_type::time_point now) {
  std::vector<entry> out;
  while (!by_due_.empty() && by_due_.begin()->first <= now) {
    auto i = by_lease_.find(by_due_.begin()->second);
    by_due_.erase(by_due_.begin());
    out.push_back(std::move(i->second));
    by_lease_.erase(i);
  }
  return out;
}

std::vector<deferred_holds::entry> deferred_holds::take_all() {
  std::vector<entry> out;
  for (auto& [k, e] : by_lease_)
    out.push_back(std::move(e));
  by_lease_.clear();
  by_due_.clear();
  return out;
}

std::optional<deferred_holds::clock_type::time_point> deferred_holds::next_due() const {
  if (by_due_.empty())
    return std::nullopt;
  return by_due_.begin()->first;
}

} // namespace ferry
