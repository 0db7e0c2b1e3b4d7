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
//   window CROSSes are admitted in order and end (FinishCross) in order;
//          over UCX up to W = min(R, L, 16) are in flight at once (READ:
//          our GETs; WRITE: the source's), over CAF one.
//   end    every local copy and every Delegate confirmed, then Unpin; only
//          its matching receipt completes the request.
// Each sweep queries every unconfirmed Delegate once and advances every
// local copy. On failure it stops, lets every CROSS in flight answer
// (bounded), drains its local copies, still sends Unpin (the source drains
// its own), and reports zero bytes; a WRITE that sent a Delegate reports
// remote_effect::unknown and is never retried.
#pragma once

#include <caf/fwd.hpp>

#include "actors/staging/remote_stager.hpp"

namespace ferry {

remote_stage_outcome run_requester_session(caf::actor_system& sys,
                                           const remote_stager_params& p,
                                           const remote_stage_request& req);

} // namespace ferry
