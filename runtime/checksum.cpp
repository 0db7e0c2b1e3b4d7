#include "runtime/checksum.hpp"

#include <cstring>

namespace ferry {

namespace {

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

} // namespace

uint64_t checksum64(const void* data, size_t size) {
  auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ size;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ mix(w + i)) * 0x100000001b3ULL;
  }
  uint64_t tail = 0;
  if (size > i)
    std::memcpy(&tail, p + i, size - i);
  return mix(h ^ mix(tail + size));
}

} // namespace ferry
