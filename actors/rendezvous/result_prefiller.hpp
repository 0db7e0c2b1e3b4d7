// result_prefiller: one detached actor (its own thread) per node that
// prepares the room of the next plain get's result while nobody waits on
// it. After a plain get delivers a large result (warm_buffers::min_kept and
// up), its consumer asks for a buffer of that size; the prefiller faults
// one in (huge pages first) and keeps it in the node's warm buffers, so the
// next get of a like size lands in memory that is already there: no zero
// fill and no fresh pages in its timed path (docs/performance.md, "A
// result prepared ahead"). The rules (when one is wanted, never evicting a
// kept buffer, the byte bound) are warm_buffers'; this is the thread.
// Off with --warm-buffer-prefill false or --warm-buffer-bytes 0.
#pragma once

#include <cstdint>
#include <memory>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

namespace ferry {

class warm_buffers;

using prefill_atom = caf::atom_constant<caf::atom("prefill")>;

/// Spawns the prefiller of `warm`. Messages: (prefill_atom, uint64_t size),
/// one way: a buffer of `size` bytes is prepared and kept when
/// warm_buffers::wants_prepared(size) says so (asked again just before),
/// else nothing is done. Requests are served in order, one at a time.
caf::actor spawn_result_prefiller(caf::actor_system& sys, std::shared_ptr<warm_buffers> warm);

/// Prepares one buffer of `size` bytes for `warm` on the calling thread, as
/// the prefiller does; true if it was kept.
bool prepare_result_buffer(warm_buffers& warm, uint64_t size);

} // namespace ferry
