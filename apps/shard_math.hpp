// The job's computation, shared by workers (on pulled bytes) and the
// coordinator (on its local copy, to verify): shard generation, sort,
// histogram and sum over little-endian uint32 values.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/byte_buffer.hpp"

namespace ferry::app {

/// Deterministic pseudo-random shard of `bytes` bytes (a multiple of 4).
byte_buffer make_shard(uint64_t seed, uint64_t shard, uint64_t bytes);

struct shard_stats {
  uint64_t count = 0;
  uint64_t sum = 0;
  std::vector<uint64_t> histogram;
};

/// Sorts the uint32 values in `bytes` in place and returns their statistics.
shard_stats sort_shard(byte_buffer& bytes);

/// Statistics without sorting.
shard_stats shard_statistics(const byte_buffer& bytes);

/// True when the uint32 values in `bytes` are in non-decreasing order.
bool is_sorted_shard(const byte_buffer& bytes);

} // namespace ferry::app
