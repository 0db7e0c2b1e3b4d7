#include "protocol/byte_buffer.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace ferry {

namespace {

/// Gives `buf` room for `size` bytes, advised huge before the first touch.
void reserve_for_bulk(byte_buffer& buf, size_t size) {
  constexpr size_t huge = 2 * 1024 * 1024;
  if (size >= 2 * huge && buf.capacity() < size) {
    byte_buffer fresh;
    fresh.reserve(size);
    auto begin = reinterpret_cast<uintptr_t>(fresh.data());
    auto first = (begin + huge - 1) / huge * huge;
    auto last = (begin + size) / huge * huge;
    if (last > first)
      madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
    buf.swap(fresh);
  }
}

} // namespace

void resize_for_bulk(byte_buffer& buf, size_t size) {
  reserve_for_bulk(buf, size);
  buf.resize(size);
}

void assign_for_bulk(byte_buffer& buf, const char* src, size_t size) {
  buf.clear();
  reserve_for_bulk(buf, size);
  buf.assign(src, src + size); // copies into the room: no zero fill first
}

} // namespace ferry
