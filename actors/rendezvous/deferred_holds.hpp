// deferred_holds: the holds of finished gets not yet sent to their owners.
// A finished get's lease must become held (no deadline) before its deadline
// passes (a GET's RDMA lease; a chunked lease's, counted from its last
// chunk served), but most callers release or detach it much sooner, which
// makes the hold moot: one message less per get, on the owner's CPU too.
// So the consumer service keeps the hold here until it is due (the
// transfer's bound: a quarter of the lease timeout, well inside the
// deadline the last renewal left) and sends it only if the caller has not
// ended the lease through this node by then. A hold that arrives after the
// lease ended some other way finds no lease and changes nothing.
// A plain structure: the consumer service owns it and its timer. Every
// finished get's hold waits here (a chunked lease's too), so the holds are
// kept by due time as well: a tick takes the due ones without a scan.
// Must never: let a hold go past its due time, or send one for a lease this
// node's caller already ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <caf/actor.hpp>

#include "protocol/data_handle.hpp"

namespace ferry {

class deferred_holds {
public:
  using clock_type = std::chrono::steady_clock;

  struct entry {
    data_handle handle;
    uint64_t lease_id = 0;
    caf::actor owner;
    clock_type::time_point due;
  };

  void add(entry e);
  /// The caller ended the lease: its hold is not sent. True if one waited.
  bool cancel(const data_handle& h, uint64_t lease_id);
  /// The holds due at `now`, removed.
  std::vector<entry> take_due(clock_type::time_point now);
  /// Every hold still waiting, removed (the service stops: send them now).
  std::vector<entry> take_all();
  std::optional<clock_type::time_point> next_due() const;
  size_t size() const { return by_lease_.size(); }

private:
  using key = std::pair<data_handle, uint64_t>;
  using due_key = std::pair<clock_type::time_point, key>;
  std::map<key, entry> by_lease_;
  std::set<due_key> by_due_; // the same holds, soonest first
};

} // namespace ferry
