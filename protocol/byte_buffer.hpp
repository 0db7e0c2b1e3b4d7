// byte_buffer: the owning byte container of payloads and chunks.
// std::vector<char> is one of CAF 0.17's built-in message types and is
// serialized as one raw block, so chunks cross nodes without per-byte work.
#pragma once

#include <cstddef>
#include <vector>

namespace ferry {

using byte_buffer = std::vector<char>;

/// Empties `buf` and gives it room for `size` bytes; large buffers are
/// asked to use transparent huge pages before their first touch. Fresh
/// pages are costly to fault in (about 20 us per 4 KiB page on
/// paravirtualised guests), and a 64 MiB buffer would otherwise take 16k
/// faults.
void reserve_for_bulk(byte_buffer& buf, size_t size);

/// Makes `buf` a copy of [src, src + size) the same way, without the zero
/// fill a resize does first (a whole extra pass over the memory).
void assign_for_bulk(byte_buffer& buf, const char* src, size_t size);

/// Writes [src, src + size) at `offset` of `buf`, growing it as needed.
/// Bytes written at the end are appended, so a buffer filled front to back
/// (chunks arriving in order) is never zero-filled first; a chunk that
/// arrives ahead of its predecessors zero-fills only the gap, which those
/// predecessors overwrite in place when they come.
void place_at(byte_buffer& buf, size_t offset, const char* src, size_t size);

/// A caller-owned destination for get_into. Local only: it never crosses a
/// node, and the caller keeps the memory alive until the reply arrives.
struct mutable_bytes {
  char* data = nullptr;
  size_t size = 0;
};

} // namespace ferry
