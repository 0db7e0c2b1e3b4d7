// staged_copy: one local GPU copy through one pinned chunk, walking the
// whole range a chunk at a time: device -> chunk -> host memory (to_host),
// or host memory -> chunk -> device (to_device). Each piece waits on the
// chunk's event before the next begins.
// Deadlines are checked at drained chunk boundaries only (a native call is
// never preempted). A copy that fails reports zero completed bytes: the
// destination may have changed, and nothing is replayed. The chunk is fit
// for reuse (chunk_ok) only when no copy of it may still be in flight and
// the caller's context was restored.
// Must never: run on a cooperative actor (it blocks on events).
#pragma once

#include <chrono>
#include <algorithm>
#include <cstddef>
#include <string>

#include <caf/error.hpp>

#include "protocol/errors.hpp"
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
  // The longest one chunk's event may take before the chunk is given up as
  // uncertain (a hung device): the bound on every wait here.
  std::chrono::milliseconds event_bound{30000};
};

struct copy_result {
  caf::error error;         // none: all bytes copied
  size_t completed = 0;     // bytes, all or nothing
  bool chunk_ok = true;     // the chunk may go back to the pool
  size_t pieces = 0;        // chunk-sized pieces finished
};

/// Runs `job` through `chunk`; `on_piece(bytes)` after each finished piece
/// (the pool's byte counters).
template <class OnPiece>
copy_result run_staged_copy(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
                            OnPiece on_piece);

/// The same without a per-piece callback.
copy_result run_staged_copy(cuda_api& api, pinned_chunk& chunk, const copy_job& job);

namespace detail {
/// Waits for `e` (polling, with backoff), at most `bound`: complete, or an
/// error (a failed query or the bound; the chunk is then uncertain).
caf::error wait_event(cuda_api& api, cuda_event e, std::chrono::milliseconds bound);
caf::error copy_piece(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
                      size_t offset, size_t n, bool& in_flight);
} // namespace detail

template <class OnPiece>
copy_result run_staged_copy(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
                            OnPiece on_piece) {
  copy_result r;
  if (auto err = api.push_context(chunk.key.ctx)) {
    r.error = std::move(err);
    return r; // nothing ran: the chunk is as it was
  }
  for (size_t off = 0; off < job.bytes && !r.error; off += chunk.bytes) {
    if (std::chrono::steady_clock::now() >= job.deadline) {
      r.error = make_error(errc::timeout, "the staged copy passed its deadline after "
                                            + std::to_string(off) + " of "
                                            + std::to_string(job.bytes) + " bytes");
      break;
    }
    auto n = std::min(chunk.bytes, job.bytes - off);
    bool in_flight = false;
    r.error = detail::copy_piece(api, chunk, job, off, n, in_flight);
    if (r.error) {
      if (in_flight) // a copy of the chunk may still run: never reuse it
        r.chunk_ok = false;
      break;
    }
    ++r.pieces;
    on_piece(n);
  }
  if (api.pop_context())
    r.chunk_ok = false;
  if (!r.error)
    r.completed = job.bytes;
  return r;
}

} // namespace ferry::staging
