// warm_buffer_reaper: one detached actor per node (its own thread: freeing
// hundreds of MiB and handing the heap back is no work for a cooperative
// worker) that lets go of the warm buffers nobody took for
// --warm-buffer-idle-ms (warm_buffers::drop_idle) and returns the freed
// heap pages to the kernel (malloc_trim). Without it, a node that got a few
// large results and then stopped would hold their memory, up to
// --warm-buffer-bytes, for the rest of its life. Off with
// --warm-buffer-idle-ms 0 or --warm-buffer-bytes 0.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

namespace ferry {

class warm_buffers;

/// How often the reaper looks: half the idle time, at least a second.
std::chrono::milliseconds warm_buffer_reap_period(std::chrono::milliseconds max_idle);

/// One look, as the reaper takes it: drops what was idle `max_idle` at
/// `now` and, when anything went, trims the heap. Returns the bytes freed.
size_t reap_idle_warm_buffers(warm_buffers& warm, std::chrono::steady_clock::time_point now,
                              std::chrono::milliseconds max_idle);

/// Spawns the reaper of `warm` (max_idle > 0); it looks every
/// warm_buffer_reap_period(max_idle) until it is told to exit.
caf::actor spawn_warm_buffer_reaper(caf::actor_system& sys, std::shared_ptr<warm_buffers> warm,
                                    std::chrono::milliseconds max_idle);

} // namespace ferry
