// staging_source: the source side of remote staging on a node (off unless
// --remote-staging). A cooperative front owns admission: it checks a Pin's
// epoch, counts session slots (min(staging workers, chunk count); a full
// set refuses the Pin before any staging memory is allocated), takes the
// exclusive loan on the device range (staging/device_exposures.hpp) and
// spawns one source session per admitted Pin: a detached actor that owns
// the session's chunks, copies and frames (source_session.hpp) until Unpin,
// the requester's loss or the deadline. The loan and the slot come back
// only when the session actor ended, after its copies drained.
//   (stage_pin_atom, stage_pin) -> stage_pin_reply
//   (stop_work_atom) -> the live sessions (local, the node's stop: Pins are
//                       refused from then on; the node ends each session,
//                       which drains, and waits for it)
// Must never: allocate before admission, or run a native call on the front.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/staging/remote_staging_stats.hpp"
#include "actors/staging/ucx_cross_means.hpp"
#include "staging/device_exposures.hpp"
#include "staging/local_stager.hpp"

namespace ferry {

struct staging_source_params {
  std::shared_ptr<staging::local_stager> stager;
  std::shared_ptr<staging::device_exposures> exposures;
  std::shared_ptr<remote_staging_stats> stats;
  uint64_t epoch = 0;      // this node's incarnation
  bool enabled = false;    // --remote-staging
  uint32_t depth = 1;      // --staging-pipeline-depth
  size_t slots = 1;        // concurrent sessions
  // How long a session outlives its requester's budget before it drains
  // and ends on its own (the request timeout).
  std::chrono::milliseconds grace{10000};
  // The most of a requester's budget a session takes (this node's
  // transfer timeout): a peer's word never holds a slot longer.
  std::chrono::milliseconds max_budget{300000};
  // The bound on draining one copy (a hung device): the chunk is then kept.
  std::chrono::milliseconds event_bound{30000};
  // The UCX CROSS (a session asks for it in its Pin): registrations of a
  // READ's slots, GETs of a WRITE's requester slots.
  ucx_cross_means ucx;
};

caf::actor spawn_staging_source(caf::actor_system& sys, staging_source_params p);

} // namespace ferry
