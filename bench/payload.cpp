#include "bench/payload.hpp"

#include <sys/mman.h>

#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "bench/bench_buffer.hpp"
#include "protocol/checksum.hpp"

namespace ferry::bench {

void fill_payload(char* dst, size_t size, uint64_t seed) {
  size_t words = size / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = (seed + i) * 0x9e3779b97f4a7c15ULL;
    w ^= w >> 29;
    std::memcpy(dst + i * 8, &w, 8);
  }
  for (size_t i = words * 8; i < size; ++i)
    dst[i] = static_cast<char>((seed + i) & 0xff);
}

std::vector<char> make_payload_vector(size_t size, uint64_t seed) {
  std::vector<char> bytes;
  bytes.reserve(size);
  auto first = reinterpret_cast<uintptr_t>(bytes.data());
  auto begin = (first + 4095) & ~uintptr_t{4095};
  auto end = (first + size) & ~uintptr_t{4095};
  if (end > begin)
    (void) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  bytes.resize(size);
  fill_payload(bytes.data(), size, seed);
  return bytes;
}

uint64_t expected_checksum(size_t size, uint64_t seed) {
  static std::mutex mtx;
  static std::map<std::pair<size_t, uint64_t>, uint64_t> known;
  std::lock_guard<std::mutex> guard{mtx};
  auto key = std::make_pair(size, seed);
  if (auto i = known.find(key); i != known.end())
    return i->second;
  bench_buffer scratch{size};
  fill_payload(scratch.data(), size, seed);
  auto sum = checksum64(scratch.data(), size);
  known.emplace(key, sum);
  return sum;
}

uint64_t checksum_of(const void* data, size_t size) {
  return checksum64(data, size);
}

std::string check_payload(const void* data, size_t got, size_t expected) {
  if (got != expected)
    return "got " + std::to_string(got) + " bytes, expected " + std::to_string(expected);
  if (checksum_of(data, got) != expected_checksum(expected))
    return "checksum mismatch";
  return {};
}

} // namespace ferry::bench
