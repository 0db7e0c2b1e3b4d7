// remote_geometry: the arithmetic of a remote staging session, plain and
// shared by both sides: the negotiated chunk size, the chunk count, the
// ring widths of the bounded pipeline and where chunk i lies.
//   chunk size C    min(requester's, source's)
//   chunks          ceil(length / C)
//   requester L     min(D_local, ceil(length / C_local)), reserved before Pin
//   source R        min(D_local, D_source, chunks)
//   chunk i         [i * C, min(length, (i + 1) * C)), local slot i % L,
//                   source slot i % R
#pragma once

#include <cstdint>

#include <caf/error.hpp>

namespace ferry::staging {

inline constexpr uint32_t max_pipeline_depth = 16;
/// The smallest chunk a session runs with (a page): a peer's smaller one
/// would only multiply the frames.
inline constexpr uint64_t min_remote_chunk = 4096;

/// True when ceil(length / chunk) fits a chunk index (32 bits).
bool chunk_count_fits(uint64_t length, uint64_t chunk);

/// ceil(length / chunk); 0 for an empty range.
uint32_t chunks_of(uint64_t length, uint64_t chunk);

/// min(a, b, chunks), at least 1.
uint32_t ring_width(uint32_t depth_a, uint32_t depth_b, uint32_t chunks);

struct chunk_span {
  uint64_t offset = 0; // into the session's range
  uint64_t length = 0;
};

/// Where chunk `i` lies in a range of `length` bytes cut in `chunk`s.
chunk_span span_of(uint64_t length, uint64_t chunk, uint32_t i);

/// A pipeline depth a node may run with: 1 (serial) to 16, and at most its
/// chunk count; invalid_argument naming the option otherwise.
caf::error check_pipeline_depth(uint64_t depth, uint64_t chunk_count);

} // namespace ferry::staging
