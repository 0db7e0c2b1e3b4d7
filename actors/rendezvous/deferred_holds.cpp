#include "actors/rendezvous/deferred_holds.hpp"

namespace ferry {

void deferred_holds::add(entry e) {
  key k{e.handle, e.lease_id};
  by_lease_[k] = std::move(e);
}

bool deferred_holds::cancel(const data_handle& h, uint64_t lease_id) {
  return by_lease_.erase(key{h, lease_id}) > 0;
}

std::vector<deferred_holds::entry>
deferred_holds::take_due(clock_type::time_point now) {
  std::vector<entry> out;
  for (auto i = by_lease_.begin(); i != by_lease_.end();) {
    if (i->second.due <= now) {
      out.push_back(std::move(i->second));
      i = by_lease_.erase(i);
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<deferred_holds::entry> deferred_holds::take_all() {
  std::vector<entry> out;
  for (auto& [k, e] : by_lease_)
    out.push_back(std::move(e));
  by_lease_.clear();
  return out;
}

std::optional<deferred_holds::clock_type::time_point> deferred_holds::next_due() const {
  std::optional<clock_type::time_point> first;
  for (const auto& [k, e] : by_lease_)
    if (!first || e.due < *first)
      first = e.due;
  return first;
}

} // namespace ferry
