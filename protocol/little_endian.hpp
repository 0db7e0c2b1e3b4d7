// little_endian: loads and stores of fixed-width integers in the
// little-endian byte order ferry's binary wire forms use (the RDMA
// descriptor, the control channel's frames), on any host.
// Must never: read or write a byte outside the width it names (callers
// prove the room first).
#pragma once

#include <cstdint>

namespace ferry {

inline uint64_t load_u64le(const uint8_t* p) noexcept {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

inline uint32_t load_u32le(const uint8_t* p) noexcept {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8
         | static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

inline uint16_t load_u16le(const uint8_t* p) noexcept {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

inline void store_u64le(uint8_t* p, uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline void store_u32le(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline void store_u16le(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

} // namespace ferry
