#include "protocol/byte_buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ferry {

void reserve_for_bulk(byte_buffer& buf, size_t size) {
  constexpr size_t huge = 2 * 1024 * 1024;
  buf.clear();
  if (size < 2 * huge || buf.capacity() >= size) {
    buf.reserve(size);
    return;
  }
  byte_buffer fresh;
  fresh.reserve(size);
  auto begin = reinterpret_cast<uintptr_t>(fresh.data());
  auto first = (begin + huge - 1) / huge * huge;
  auto last = (begin + size) / huge * huge;
  if (last > first)
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  buf.swap(fresh);
}

void assign_for_bulk(byte_buffer& buf, const char* src, size_t size) {
  reserve_for_bulk(buf, size);
  buf.assign(src, src + size); // copies into the room: no zero fill first
}

void place_at(byte_buffer& buf, size_t offset, const char* src, size_t size) {
  if (offset > buf.size())
    buf.resize(offset); // a gap: zero-filled until its bytes arrive
  size_t over = std::min(size, buf.size() - offset); // bytes already there
  if (over > 0)
    std::memcpy(buf.data() + offset, src, over);
  buf.insert(buf.end(), src + over, src + size); // the rest: appended, not zeroed
}

} // namespace ferry
