// region_registry: the node's external regions (memory the caller registered)
// as the arena pool actor keeps them. A plain data structure, not
// thread-safe: the pool actor owns it and passes `now` in.
//
// - register_region maps a region and charges its whole pages to the same
//   registered_budget as the arenas (over it: budget, never a silent copy).
// - begin_unregister closes the region's gate and queues it; progress(now)
//   finishes each queued region once its anchors are gone (drained) or its
//   deadline passed (drain_timed_out): latch the copy gate, unmap, give the
//   pages back to the budget, call the before_release hook (the pool's
//   gauges), resolve the release signal — in that order, so whoever waits
//   on the signal sees the pool's numbers already settled.
// - gate_all is the shutdown sweep: refuse new registrations and queue
//   every region under one deadline.
// - Destroying the registry finishes whatever is left (drain_timed_out), so
//   no region outlives the pool mapped or unresolved.
// Must never: resolve a release before the unmap, or unmap a region a copy
// is reading (the latch waits for it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "rdma/arena_pool.hpp"
#include "rdma/external_region.hpp"
#include "rdma/registered_budget.hpp"

namespace ferry {

/// Registers caller-owned memory [data, data + size), or says why not.
using external_mapper = std::function<
  std::variant<std::unique_ptr<mapped_region>, std::string>(char*, uint64_t)>;

class region_registry {
public:
  using clock_type = std::chrono::steady_clock;

  enum class refusal { budget, draining, map_failed };

  struct refused {
    refusal why;
    std::string message;
  };

  region_registry(registered_budget& budget, external_mapper mapper);
  ~region_registry();
  region_registry(const region_registry&) = delete;
  region_registry& operator=(const region_registry&) = delete;

  /// Maps `region`; its id, or why not (nothing charged then).
  std::variant<uint64_t, refused> register_region(const external_region_ptr& region);

  /// Gates `region` and queues its unregistration until `deadline`. A region
  /// already released or queued is left as it is.
  void begin_unregister(const external_region_ptr& region,
                        clock_type::time_point deadline);

  /// Finishes queued regions that drained or ran out of time; true while
  /// some are still queued.
  bool progress(clock_type::time_point now);

  /// Called for each finished region after its pages are back and before
  /// its release signal resolves. Not called by the destructor.
  void set_before_release(std::function<void()> hook) {
    before_release_ = std::move(hook);
  }

  /// Refuses new registrations and queues every region until `deadline`.
  void gate_all(clock_type::time_point deadline);
  bool gated() const { return gated_; }

  /// True when no region ended with drain_timed_out since gate_all.
  bool all_drained() const { return !timed_out_since_gate_; }

  size_t live() const { return regions_.size(); }
  size_t pending() const { return pending_.size(); }
  uint64_t registrations() const { return registrations_; }

private:
  struct queued {
    external_region_ptr region;
    clock_type::time_point deadline;
  };

  void finish(const external_region_ptr& region, external_region::outcome how);

  registered_budget* budget_;
  external_mapper mapper_;
  std::function<void()> before_release_;
  std::map<uint64_t, external_region_ptr> regions_; // mapped, by id
  std::vector<queued> pending_;
  uint64_t next_id_ = 1;
  uint64_t registrations_ = 0;
  bool gated_ = false;
  bool timed_out_since_gate_ = false;
};

const char* to_string(region_registry::refusal r);

} // namespace ferry
