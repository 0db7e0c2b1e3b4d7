// checksum64: what the end-to-end byte checks rely on. Equal bytes give equal
// sums; one flipped bit, two swapped chunks or a changed length do not.
#include "protocol/checksum.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {

std::vector<unsigned char> pattern(size_t size) {
  std::vector<unsigned char> v(size);
  uint64_t x = 0x2545f4914f6cdd1dULL;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  return v;
}

TEST(ProtocolChecksum, EqualBytesGiveEqualSums) {
  auto a = pattern(1 << 20);
  auto b = a;
  EXPECT_EQ(ferry::checksum64(a.data(), a.size()),
            ferry::checksum64(b.data(), b.size()));
}

TEST(ProtocolChecksum, OneFlippedBitChangesTheSum) {
  auto a = pattern(3 << 20);
  auto before = ferry::checksum64(a.data(), a.size());
  for (size_t at : {size_t{0}, a.size() / 2 + 5, a.size() - 1}) {
    a[at] ^= 0x10;
    EXPECT_NE(ferry::checksum64(a.data(), a.size()), before) << "at " << at;
    a[at] ^= 0x10;
  }
}

TEST(ProtocolChecksum, SwappedChunksChangeTheSum) {
  constexpr size_t chunk = 512 * 1024;
  auto a = pattern(4 * chunk);
  auto before = ferry::checksum64(a.data(), a.size());
  std::swap_ranges(a.begin(), a.begin() + chunk, a.begin() + 2 * chunk);
  EXPECT_NE(ferry::checksum64(a.data(), a.size()), before);
}

TEST(ProtocolChecksum, TheLengthCounts) {
  std::vector<unsigned char> zeros(64, 0);
  EXPECT_NE(ferry::checksum64(zeros.data(), 63), ferry::checksum64(zeros.data(), 64));
  EXPECT_NE(ferry::checksum64(zeros.data(), 0), ferry::checksum64(zeros.data(), 1));
}

} // namespace
