// source_session: one admitted remote staging session on the source, a
// detached actor (its copies and drains block). It owns the session's
// source_ring (the rules), its ring of pinned chunks borrowed from the
// node's local_stager, and its device loan's bytes. At Pin it checks that
// the range really is device memory, negotiates the chunk size and ring
// width and borrows the whole ring (or refuses: resource_exhausted).
//   (stage_pin_atom, stage_pin)             -> stage_pin_reply (first)
//   (stage_delegate_atom, frame)            -> frame (copy started)
//   (stage_query_atom, frame)               -> frame, bool complete
//   (stage_cross_atom, frame, off, len)     -> chunk_bytes (READ)
//   (stage_cross_atom, frame, off, bytes)   -> frame (WRITE)
//   (stage_cross_atom, frame, slot key)     -> frame (WRITE over UCX), once
//                                              its GET of the requester's
//                                              slot ended (several may run)
//   (stage_finish_atom, frame)              -> frame
//   (stage_unpin_atom, frame)               -> frame, after the drain
// A CUDA failure makes the session fail (sticky): every later frame but
// Unpin is refused. It ends after Unpin, when its requester goes away, or
// past its budget plus the grace; every end drains the copies in flight and
// gives the chunks back (a chunk whose copy did not confirm is retained).
#pragma once

#include <cstdint>

#include <caf/fwd.hpp>

#include "actors/staging/staging_source.hpp"

namespace ferry {

struct source_session_params {
  staging_source_params source;
  staging::device_loan loan;
  uint64_t session = 0;
  caf::actor requester; // monitored: its loss ends the session
};

caf::actor spawn_source_session(caf::actor_system& sys, source_session_params p);

} // namespace ferry
