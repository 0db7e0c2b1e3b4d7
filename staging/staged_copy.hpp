// staged_copy: one local GPU copy through one pinned chunk, walking the
// whole range: device -> chunk -> host memory (to_host), or host memory ->
// chunk -> device (to_device). The chunk works as two halves in turn, each
// with its own event, so the device copies one piece while the host copies
// the other (a half is reused only after its event completed).
// Deadlines are checked at drained piece boundaries only (a native call is
// never preempted); pieces in flight then drain before the copy ends. A
// copy that fails reports zero completed bytes: the destination may have
// changed, and nothing is replayed. The chunk is fit for reuse (chunk_ok)
// only when no copy into it may still be in flight and the caller's
// context was restored.
// Must never: run on a cooperative actor (it blocks on events).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include <caf/error.hpp>

#include "staging/cuda_api.hpp"
#include "staging/pinned_chunk.hpp"

namespace ferry::staging {

enum class copy_direction { to_host, to_device };

struct copy_job {
  copy_direction direction = copy_direction::to_host;
  device_ptr device = 0;
  char* host = nullptr;
  size_t bytes = 0;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // The longest one piece's event may take before the chunk is given up as
  // uncertain (a hung device): the bound on every wait here.
  std::chrono::milliseconds event_bound{30000};
};

struct copy_result {
  caf::error error;     // none: all bytes copied
  size_t completed = 0; // bytes, all or nothing
  bool chunk_ok = true; // the chunk may go back to the pool
  size_t pieces = 0;    // pieces finished (each at most half a chunk)
};

/// Runs `job` through `chunk`; `on_piece(bytes)` after each finished piece
/// (the pool's byte counters).
copy_result run_staged_copy(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
                            const std::function<void(size_t)>& on_piece = {});

/// Waits for `e` (polling, with backoff), at most `bound`: complete, or an
/// error (a failed query or the bound).
caf::error wait_event(cuda_api& api, cuda_event e, std::chrono::milliseconds bound);

} // namespace ferry::staging
