// staging_config: the chunk pool's size and where its chunks live, with the
// checks a node runs at start, before anything is allocated.
//   staging_chunk_size   4 MiB, at most 64 MiB
//   staging_chunk_count  64, at most 4096
//   their physical product (each chunk rounded up to whole pages of its
//   backing: 4 KiB, or 2 MiB once it is NUMA-bound) at most 1 GiB
//   staging_location     any | auto | cpu:N
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ferry::staging {

/// Where pinned chunks are placed.
struct staging_location {
  enum class kind { any, automatic, cpu };
  kind k = kind::any;
  int node = -1; // cpu:N

  static std::optional<staging_location> parse(const std::string& text);
  std::string to_string() const;
  friend bool operator==(const staging_location& a, const staging_location& b) {
    return a.k == b.k && a.node == b.node;
  }
};

struct staging_config {
  static constexpr uint64_t max_chunk_size = 64ull << 20;
  static constexpr uint64_t max_chunk_count = 4096;
  static constexpr uint64_t max_pool_bytes = 1ull << 30;

  uint64_t chunk_size = 4ull << 20;
  uint64_t chunk_count = 64;
  staging_location location;

  /// The bytes one chunk really takes (rounded to its backing's pages).
  uint64_t physical_chunk_bytes() const;
  /// Empty when the configuration is valid, else a message naming the
  /// option at fault.
  std::string check() const;
};

} // namespace ferry::staging
