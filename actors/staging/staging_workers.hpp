// staging_workers: the bounded set of detached actors (own threads) that run
// local GPU copies through the node's local_stager, one copy at a time
// each, replying on completion. A request waits in a worker's mailbox
// until its turn; its ticket lets the requester cancel it while it waits
// (it then replies `cancelled` having copied nothing). A copy that started
// runs to its end (it drains; deadlines are checked at chunk boundaries).
// At most `max_queued` requests wait or run at once: one more is refused
// with resource_exhausted at once.
//   (gpu_copy_atom, gpu_copy_request) -> uint64_t bytes copied
// Must never: run a copy on a cooperative thread, or copy into memory the
// request does not keep alive.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>

#include "staging/local_stager.hpp"

namespace ferry {

struct staging_metrics;

/// A request's place in line: the requester cancels while it is queued.
class gpu_copy_ticket {
public:
  /// True when the copy had not started (it never will).
  bool cancel() {
    int expected = queued;
    return state_.compare_exchange_strong(expected, cancelled);
  }
  /// The worker's claim; false when it was cancelled first.
  bool start() {
    int expected = queued;
    return state_.compare_exchange_strong(expected, running);
  }
  /// Whether it was cancelled (claims nothing).
  bool was_cancelled() const { return state_.load() == cancelled; }

private:
  enum { queued, running, cancelled };
  std::atomic<int> state_{queued};
};

struct gpu_copy_request {
  int device = 0;
  staging::copy_job job;
  std::shared_ptr<gpu_copy_ticket> ticket = std::make_shared<gpu_copy_ticket>();
  std::shared_ptr<const void> keep; // the host memory of `job`, until the reply
};

struct staging_workers_params {
  std::shared_ptr<staging::local_stager> stager;
  size_t workers = 2;
  size_t max_queued = 64;
  staging_metrics* metrics = nullptr;
};

/// The workers behind one round-robin handle (with the shared queue bound).
caf::actor spawn_staging_workers(caf::actor_system& sys, staging_workers_params p);

} // namespace ferry

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::gpu_copy_request)
