// offset_allocator: hands out ranges of granules inside one arena.
// Owns: the bookkeeping of which granule ranges of [0, granules) are in use,
// as offsets only; the arena pool maps offsets to addresses (4 KiB granules).
// Must never: touch memory, call UCX, lock, or refuse a request while a free
// range large enough for it exists (its node pool is sized to the granule
// count, so it cannot run out of bookkeeping before it runs out of granules).
//
// Shape: two-level segregated fit. Free ranges sit in 256 bins keyed by a
// small float (3 mantissa bits, 5 exponent bits) of their size rounded down; a
// request searches from its size rounded up, so any range found fits, and two
// bitmaps (32 groups x 8 bins) find the first non-empty bin in O(1). Bin
// sizes step by at most 1/8, so rounding a request up to its bin overshoots by
// at most 12.5%; that overshoot only narrows which ranges the O(1) search
// considers, because the allocation itself takes exactly the granules asked
// for and the rest of the chosen range goes back to a bin. When the O(1)
// search finds nothing, the one bin that can still hold a fitting range (the
// request's size rounded down) is walked, so a request fails only when no
// free range can hold it.
// Freed ranges coalesce with free neighbours at once.
//
// Zero-granule requests are refused (nullopt): an allocation must own at least
// one granule, or its offset could alias a neighbour's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace ferry {

class offset_allocator {
public:
  /// The private free token of one allocation. `offset` is in granules;
  /// `node` names the bookkeeping slot and is only meaningful to free().
  struct allocation {
    uint32_t offset = 0;
    uint32_t node = 0;
  };

  static constexpr uint32_t mantissa_bits = 3;
  static constexpr uint32_t bins_per_group = 1u << mantissa_bits; // 8
  static constexpr uint32_t group_count = 32;
  static constexpr uint32_t bin_count = bins_per_group * group_count; // 256
  static constexpr uint32_t no_node = 0xFFFFFFFFu;

  /// Manages [0, granules); all of it starts free.
  explicit offset_allocator(uint32_t granules);

  /// Reserves exactly `granules` contiguous granules. nullopt when granules
  /// is 0 or no free range can hold the request.
  std::optional<allocation> allocate(uint32_t granules);

  /// Returns an allocation's granules and merges them with free neighbours.
  /// Returns false (and changes nothing) for a token that names no live
  /// allocation, e.g. a second free of the same token. A token whose node has
  /// since been reused for a new allocation at the same offset cannot be told
  /// apart from that new allocation: callers free each token once.
  bool free(allocation a);

  /// Granules not allocated (exact).
  uint32_t free_granules() const noexcept {
    return free_granules_;
  }

  /// Size of the largest free range, i.e. the largest request that succeeds.
  /// Walks one bin; not for hot paths.
  uint32_t largest_free() const noexcept;

  /// True when nothing is allocated.
  bool empty() const noexcept {
    return live_allocations_ == 0;
  }

  /// Total granules managed.
  uint32_t capacity() const noexcept {
    return capacity_;
  }

  /// Number of disjoint free ranges (1 when empty and capacity > 0).
  uint32_t free_ranges() const noexcept {
    return free_ranges_;
  }

  /// Number of live allocations.
  uint32_t allocation_count() const noexcept {
    return live_allocations_;
  }

  /// Size of the allocation behind a live token, 0 for anything else.
  uint32_t allocation_size(allocation a) const noexcept;

  // The small-float size classes, public for tests and for callers that want
  // to know what a request costs.
  /// Smallest bin whose every range can hold `size` granules.
  static uint32_t bin_round_up(uint32_t size) noexcept;
  /// Bin a free range of `size` granules is filed under.
  static uint32_t bin_round_down(uint32_t size) noexcept;
  /// Smallest range size filed under `bin` (exact for bins below 240).
  static uint64_t bin_min_size(uint32_t bin) noexcept;

private:
  struct node {
    uint32_t offset = 0;
    uint32_t size = 0;
    uint32_t bin_prev = no_node; // neighbours in this range's bin list
    uint32_t bin_next = no_node;
    uint32_t addr_prev = no_node; // neighbours in address order
    uint32_t addr_next = no_node;
    bool used = false;
  };

  uint32_t take_node() noexcept;
  void release_node(uint32_t n) noexcept;
  void insert_free(uint32_t n) noexcept;
  void remove_free(uint32_t n) noexcept;
  uint32_t first_bin_at_least(uint32_t bin) const noexcept;

  uint32_t capacity_;
  uint32_t free_granules_ = 0;
  uint32_t free_ranges_ = 0;
  uint32_t live_allocations_ = 0;
  std::vector<node> nodes_;
  uint32_t spare_head_ = no_node; // unused node slots, linked via bin_next
  uint32_t group_mask_ = 0; // bit g: some bin of group g is non-empty
  std::array<uint8_t, group_count> bin_masks_{}; // bit b: bin g*8+b non-empty
  std::array<uint32_t, bin_count> bin_heads_{};
};

} // namespace ferry
