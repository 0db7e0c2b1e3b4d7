// byte_buffer: the owning byte container of payloads and chunks.
// std::vector<char> is one of CAF 0.17's built-in message types and is
// serialized as one raw block, so chunks cross nodes without per-byte work.
#pragma once

#include <cstddef>
#include <vector>

namespace ferry {

using byte_buffer = std::vector<char>;

/// A caller-owned destination for get_into. Local only: it never crosses a
/// node, and the caller keeps the memory alive until the reply arrives.
struct mutable_bytes {
  char* data = nullptr;
  size_t size = 0;
};

} // namespace ferry
