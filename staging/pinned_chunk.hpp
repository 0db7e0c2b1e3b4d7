// pinned_chunk: one staging chunk's native state: its host memory (a fresh
// mapping, bound to its NUMA node before first touch unless `any`), that
// memory's registration with the chunk's context, and the chunk's own
// stream and two events, one per half (a copy walks the chunk as two
// halves, so the device fills one while the host drains the other). Made and released with the context pushed, in the
// spec's order: release destroys the event and stream, unregisters,
// restores the caller's context and only then unmaps; a step that failed
// leaves the mapping in place (leaked on purpose, its charge kept).
#pragma once

#include <cstddef>
#include <memory>

#include <caf/expected.hpp>

#include "staging/chunk_pool.hpp"
#include "staging/cuda_api.hpp"
#include "staging/numa_placement.hpp"

namespace ferry::staging {

struct pinned_chunk {
  chunk_key key;
  bound_mapping memory;
  size_t bytes = 0; // usable bytes (the configured chunk size)
  bool registered = false;
  cuda_stream stream = 0;
  cuda_event events[2] = {0, 0}; // one per half
  char* data() const { return memory.data(); }
  /// Bytes of one half (the last piece of a copy may be shorter).
  size_t half() const { return bytes > 1 ? (bytes + 1) / 2 : bytes; }
};

/// A new chunk for `key` of `bytes`: the pool outcome (ok, failed_clean
/// when everything made was undone, failed_uncertain when not) and, unless
/// failed_clean, the chunk (partial when uncertain: keep it retained).
struct chunk_made {
  chunk_pool::outcome outcome = chunk_pool::outcome::failed_clean;
  std::shared_ptr<pinned_chunk> chunk;
  caf::error error;
};
chunk_made make_pinned_chunk(cuda_api& api, const chunk_key& key, size_t bytes);

/// Releases everything of `c`; ok, or failed_uncertain (the mapping is
/// then kept, never unmapped under a registration that may remain).
chunk_pool::outcome release_pinned_chunk(cuda_api& api, pinned_chunk& c,
                                         caf::error* why = nullptr);

} // namespace ferry::staging
