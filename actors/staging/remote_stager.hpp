// remote_stager: the requester side of remote staging on a node: at most
// eight detached shard actors behind one front, each running one session at
// a time to its end (requester_session.hpp). The front keeps one line: a
// session goes to whichever shard is free, and waits only while all are
// busy; at most 64 sessions wait or run, one more is refused with
// resource_exhausted at once. Queue time consumes the request's deadline; a
// request cancelled while it waits (its ticket) is destroyed before its Pin
// and answers `cancelled`.
//   (remote_stage_atom, remote_stage_request) -> remote_stage_outcome
//   (stop_work_atom) -> true   the node's stop: new sessions are refused,
//                              waiting ones answer cancelled, running ones
//                              end at their next step (draining, after their
//                              Unpin), and the answer comes once none runs
// A shard lost to an exception is replaced; its caller gets an error. The
// front is not linked to its shards (a shard's end never takes the front
// down); the front's end stops them.
// Must never: run a session on a cooperative thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include "actors/staging/remote_staging_stats.hpp"
#include "actors/staging/staging_workers.hpp"
#include "actors/staging/ucx_cross_means.hpp"
#include "protocol/remote_staging_wire.hpp"
#include "staging/device_exposures.hpp"
#include "staging/local_stager.hpp"

namespace ferry {

/// One remote READ (source range -> local device memory) or WRITE (local
/// device memory -> source range).
struct remote_stage_request {
  remote_device_range range;
  uint64_t offset = 0; // into the source's range
  uint64_t length = 0;
  stage_direction direction = stage_direction::read;
  int device = 0;                 // the local device
  staging::device_ptr local = 0;  // the local device range, `length` bytes
  caf::actor source;              // the source node's staging front
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<gpu_copy_ticket> ticket = std::make_shared<gpu_copy_ticket>();
};

/// What the source's device may hold after a failed WRITE.
enum class remote_effect : uint8_t {
  none,   // nothing was sent that could change it
  unknown // a Delegate was sent: some bytes may have changed
};

struct remote_stage_outcome {
  caf::error error;       // none: every byte moved
  uint64_t completed = 0; // all or nothing
  remote_effect effect = remote_effect::none;

  /// Nothing moved and nothing was sent that could change the source.
  static remote_stage_outcome failed(caf::error err) {
    remote_stage_outcome out;
    out.error = std::move(err);
    return out;
  }
};

struct remote_stager_params {
  std::shared_ptr<staging::local_stager> stager;
  std::shared_ptr<remote_staging_stats> stats;
  size_t shards = 4;        // at most 8
  size_t max_queued = 64;
  uint32_t depth = 1;       // --staging-pipeline-depth
  std::chrono::milliseconds request_timeout{10000}; // one call to the source
  std::chrono::milliseconds event_bound{30000};     // one local copy's drain
  // The node's loans on device bytes: a session's own range is lent to it
  // alone (an overlapping session is refused before its Pin).
  std::shared_ptr<staging::device_exposures> exposures;
  ucx_cross_means ucx;    // the CROSS over one UCX GET, when the source agrees
  uint64_t worker_id = 0; // this node's (a WRITE's source GETs from it)
  // Set by the node's stop: running sessions end at their next step.
  std::shared_ptr<std::atomic<bool>> stopping = std::make_shared<std::atomic<bool>>(false);
  // Tests only: runs in each session at each named step, "taken" (in the
  // shard, before the session starts: a throw there loses the shard),
  // "pinned" (right after its Pin) and "finishing" (as its end begins): a
  // throw in the session exercises its cleanup after an exception.
  std::function<void(std::string_view step)> step_hook;
};

inline constexpr size_t max_remote_stager_shards = 8;

caf::actor spawn_remote_stagers(caf::actor_system& sys, remote_stager_params p);

} // namespace ferry

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::remote_stage_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::remote_stage_outcome)
