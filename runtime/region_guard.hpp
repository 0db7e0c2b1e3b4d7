// region_guard: the caller's handle on memory it registered with a node
// (blocking_client::register_external_memory or register_owned), and
// region_watch, an observer of the same region that owns nothing.
//
// The guard owns the release of the registration, not the memory:
// - unregister(timeout) gates new staging in the region, waits up to
//   `timeout` for the slots staged in it to go, then unmaps. It answers
//   drained or drain_timed_out: both mean the memory is released and the
//   caller may free it. An error means the unmap was not confirmed: do not
//   free the memory then.
// - unregister_owned(timeout) does the same and hands back the buffer of a
//   register_owned region.
// - Destroying a guard that was not unregistered starts the same
//   unregistration in the background (bounded by drop_dereg_timeout), logs
//   a warning and returns at once: the memory stays registered until then,
//   so the caller must not free it before watch().wait_deregistered() says so.
// - A node's graceful stop releases every region (drain_timed_out for
//   those with slots left).
// Registered memory is remotely writable by any peer holding its key, and
// registration pins whole pages: effective_range() says which.
// Must never: report a release before the pool confirmed the unmap.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include <caf/actor_control_block.hpp>
#include <caf/expected.hpp>

#include "actors/rdma/arena_pool_actor.hpp"
#include "protocol/byte_buffer.hpp"
#include "rdma/external_region.hpp"

namespace ferry {

using deregistered = external_region::outcome;

class region_watch {
public:
  explicit region_watch(external_region_ptr region) : region_(std::move(region)) {}
  /// True once the registration is gone (the memory may be freed).
  bool deregistered() const { return region_->released(); }
  /// Waits up to `timeout` for the release; its outcome, or nullopt.
  std::optional<ferry::deregistered>
  wait_deregistered(std::chrono::milliseconds timeout) const {
    return region_->wait_released(timeout);
  }
  /// Slots (and registrations in progress) holding the region.
  uint64_t in_flight() const { return region_->in_flight(); }

private:
  external_region_ptr region_;
};

class region_guard {
public:
  region_guard(external_region_ptr region, arena_pool_actor pool,
               std::chrono::milliseconds drop_timeout);
  region_guard(region_guard&& other) noexcept;
  /// Assigning over a live guard drops it first (see the destructor).
  region_guard& operator=(region_guard&& other) noexcept;
  region_guard(const region_guard&) = delete;
  region_guard& operator=(const region_guard&) = delete;
  ~region_guard();

  /// Gate, drain (up to `timeout`), unmap; see the header comment.
  caf::expected<deregistered> unregister(std::chrono::milliseconds timeout);

  /// unregister, then the buffer a register_owned region holds.
  caf::expected<byte_buffer> unregister_owned(std::chrono::milliseconds timeout);

  region_watch watch() const { return region_watch{region_}; }

  char* data() const { return region_->data(); }
  uint64_t size() const { return region_->size(); }
  /// The bytes registration pinned (whole pages): [first, second).
  std::pair<uint64_t, uint64_t> effective_range() const {
    return {region_->effective_begin(), region_->effective_end()};
  }
  const external_region_ptr& region() const { return region_; }

private:
  void drop();
  void start_unregister(std::chrono::milliseconds timeout);

  external_region_ptr region_;
  caf::weak_actor_ptr pool_; // weak: a guard must not keep a stopped node's pool alive
  std::chrono::milliseconds drop_timeout_;
};

} // namespace ferry
