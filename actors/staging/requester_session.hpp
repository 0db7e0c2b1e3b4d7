// requester_session: one remote staging session on the requester, run to
// its end on a shard's thread (blocking; never a cooperative actor). It
// owns its local ring (L chunks borrowed before Pin), the calls to the
// source session (each bounded by the request timeout and the deadline,
// each receipt checked against the frame it answers) and the scheduling of
// the bounded pipeline:
//   READ   Delegate prefills R source copies; CROSS i needs its Delegate
//          confirmed by QueryDelegate and local slot i % L's previous POST
//          done; FinishCross frees the source slot for Delegate i + R and
//          starts the local POST (slot -> device).
//   WRITE  L local PREs (device -> slot) prefill; CROSS i needs its local
//          PRE done and source slot i % R's previous Delegate confirmed;
//          after FinishCross and the Delegate (the remote effect becomes
//          unknown first) the local slot takes PRE i + L.
//   end    every local copy and every Delegate confirmed, then Unpin; only
//          its matching receipt completes the request.
// On failure it stops, drains its local copies, still sends Unpin (the
// source drains its own), and reports zero bytes; a WRITE that sent a
// Delegate reports remote_effect::unknown and is never retried.
#pragma once

#include <caf/fwd.hpp>

#include "actors/staging/remote_stager.hpp"

namespace ferry {

remote_stage_outcome run_requester_session(caf::actor_system& sys,
                                           const remote_stager_params& p,
                                           const remote_stage_request& req);

} // namespace ferry
