#include "apps/shard_math.hpp"

#include <algorithm>
#include <cstring>

#include "apps/job_types.hpp"

namespace ferry::app {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<uint32_t> values_of(const byte_buffer& bytes) {
  std::vector<uint32_t> v(bytes.size() / 4);
  if (!v.empty())
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

shard_stats stats_of(const std::vector<uint32_t>& v) {
  shard_stats s;
  s.count = v.size();
  s.histogram.assign(histogram_bins, 0);
  for (auto x : v) {
    s.sum += x;
    ++s.histogram[x >> 24];
  }
  return s;
}

} // namespace

byte_buffer make_shard(uint64_t seed, uint64_t shard, uint64_t bytes) {
  byte_buffer out(bytes / 4 * 4);
  uint64_t state = seed * 0x100000001b3ULL + shard;
  for (size_t i = 0; i + 8 <= out.size(); i += 8) {
    auto r = splitmix64(state);
    std::memcpy(out.data() + i, &r, 8);
  }
  if (out.size() % 8 != 0) {
    auto r = splitmix64(state);
    std::memcpy(out.data() + out.size() - 4, &r, 4);
  }
  return out;
}

shard_stats sort_shard(byte_buffer& bytes) {
  auto v = values_of(bytes);
  std::sort(v.begin(), v.end());
  if (!v.empty())
    std::memcpy(bytes.data(), v.data(), v.size() * 4);
  return stats_of(v);
}

shard_stats shard_statistics(const byte_buffer& bytes) {
  return stats_of(values_of(bytes));
}

bool is_sorted_shard(const byte_buffer& bytes) {
  auto v = values_of(bytes);
  return std::is_sorted(v.begin(), v.end());
}

} // namespace ferry::app
