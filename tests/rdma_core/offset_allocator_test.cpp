#include "rdma/offset_allocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using ferry::offset_allocator;
using allocation = offset_allocator::allocation;

namespace {

// Shadow model: which granules are in use, to check allocations never overlap
// and the allocator's counters are exact.
struct shadow {
  explicit shadow(uint32_t n) : used(n, false) {}
  std::vector<bool> used;

  void take(uint32_t off, uint32_t len) {
    ASSERT_LE(uint64_t{off} + len, used.size());
    for (uint32_t i = off; i < off + len; ++i) {
      ASSERT_FALSE(used[i]) << "granule " << i << " handed out twice";
      used[i] = true;
    }
  }
  void give(uint32_t off, uint32_t len) {
    for (uint32_t i = off; i < off + len; ++i)
      used[i] = false;
  }
  uint32_t free_count() const {
    return static_cast<uint32_t>(std::count(used.begin(), used.end(), false));
  }
  uint32_t largest_gap() const {
    uint32_t best = 0, run = 0;
    for (bool u : used) {
      run = u ? 0 : run + 1;
      best = std::max(best, run);
    }
    return best;
  }
  uint32_t gaps() const {
    uint32_t n = 0;
    for (size_t i = 0; i < used.size(); ++i)
      if (!used[i] && (i == 0 || used[i - 1]))
        ++n;
    return n;
  }
};

} // namespace

TEST(OffsetAllocatorBins, rounding_is_monotonic_and_within_one_eighth) {
  for (uint32_t s = 1; s < (1u << 20); ++s) {
    const uint32_t up = offset_allocator::bin_round_up(s);
    const uint32_t down = offset_allocator::bin_round_down(s);
    ASSERT_LE(down, up);
    ASSERT_LE(up - down, 1u);
    ASSERT_LE(offset_allocator::bin_min_size(down), s);
    ASSERT_GE(offset_allocator::bin_min_size(up), s);
    // Rounding a request up costs at most 12.5% of it.
    ASSERT_LE(offset_allocator::bin_min_size(up) * 8, uint64_t{s} * 9) << s;
    if (s > 1) {
      ASSERT_LE(offset_allocator::bin_round_down(s - 1), down);
    }
  }
  for (uint32_t s : {0x7fffffffu, 0x80000000u, 0xffffffffu}) {
    EXPECT_LT(offset_allocator::bin_round_up(s), offset_allocator::bin_count);
    EXPECT_LE(offset_allocator::bin_min_size(offset_allocator::bin_round_down(s)),
              s);
  }
  for (uint32_t b = 0; b < 16; ++b)
    EXPECT_EQ(offset_allocator::bin_min_size(b), b);
}

TEST(OffsetAllocatorBasic, fresh_allocator_is_one_free_range) {
  offset_allocator a(16384);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.capacity(), 16384u);
  EXPECT_EQ(a.free_granules(), 16384u);
  EXPECT_EQ(a.largest_free(), 16384u);
  EXPECT_EQ(a.free_ranges(), 1u);
}

TEST(OffsetAllocatorBasic, allocations_are_exact_and_contiguous) {
  offset_allocator a(100);
  auto x = a.allocate(10);
  auto y = a.allocate(17);
  auto z = a.allocate(1);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(x->offset, 0u);
  EXPECT_EQ(y->offset, 10u);
  EXPECT_EQ(z->offset, 27u);
  EXPECT_EQ(a.allocation_size(*y), 17u);
  EXPECT_EQ(a.free_granules(), 72u);
  EXPECT_EQ(a.largest_free(), 72u);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.allocation_count(), 3u);
}

TEST(OffsetAllocatorBasic, zero_granules_is_refused) {
  offset_allocator a(8);
  EXPECT_FALSE(a.allocate(0).has_value());
  EXPECT_EQ(a.free_granules(), 8u);
  EXPECT_TRUE(a.empty());
}

TEST(OffsetAllocatorBasic, zero_capacity_allocator) {
  offset_allocator a(0);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.free_granules(), 0u);
  EXPECT_EQ(a.largest_free(), 0u);
  EXPECT_FALSE(a.allocate(1).has_value());
  EXPECT_FALSE(a.free(allocation{0, 0}));
}

TEST(OffsetAllocatorBasic, exhaustion_returns_nullopt) {
  offset_allocator a(64);
  EXPECT_FALSE(a.allocate(65).has_value());
  auto all = a.allocate(64);
  ASSERT_TRUE(all);
  EXPECT_EQ(a.free_granules(), 0u);
  EXPECT_FALSE(a.allocate(1).has_value());
  EXPECT_TRUE(a.free(*all));
  EXPECT_TRUE(a.allocate(64).has_value());
}

TEST(OffsetAllocatorBasic, single_granule_allocations_fill_everything) {
  // Every granule its own allocation: needs one node per granule.
  const uint32_t n = 1000;
  offset_allocator a(n);
  std::vector<allocation> got;
  for (uint32_t i = 0; i < n; ++i) {
    auto x = a.allocate(1);
    ASSERT_TRUE(x) << i;
    EXPECT_EQ(x->offset, i);
    got.push_back(*x);
  }
  EXPECT_FALSE(a.allocate(1).has_value());
  EXPECT_EQ(a.free_granules(), 0u);
  // Free every other one: n/2 one-granule holes, none adjacent.
  for (uint32_t i = 0; i < n; i += 2)
    ASSERT_TRUE(a.free(got[i]));
  EXPECT_EQ(a.free_ranges(), n / 2);
  EXPECT_EQ(a.largest_free(), 1u);
  EXPECT_FALSE(a.allocate(2).has_value());
  for (uint32_t i = 1; i < n; i += 2)
    ASSERT_TRUE(a.free(got[i]));
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.largest_free(), n);
}

TEST(OffsetAllocatorFree, double_and_foreign_frees_are_refused) {
  offset_allocator a(32);
  auto x = a.allocate(4);
  ASSERT_TRUE(x);
  EXPECT_TRUE(a.free(*x));
  EXPECT_FALSE(a.free(*x));
  EXPECT_FALSE(a.free(allocation{0, 999}));
  auto y = a.allocate(4);
  ASSERT_TRUE(y);
  EXPECT_FALSE(a.free(allocation{y->offset + 1, y->node}));
  EXPECT_EQ(a.free_granules(), 28u);
  EXPECT_TRUE(a.free(*y));
  EXPECT_TRUE(a.empty());
}

TEST(OffsetAllocatorFree, coalesces_in_every_order) {
  // Three neighbours freed in all 6 orders always merge back to one range.
  std::vector<int> order = {0, 1, 2};
  do {
    offset_allocator a(30);
    allocation parts[3] = {*a.allocate(10), *a.allocate(10), *a.allocate(10)};
    EXPECT_EQ(a.free_ranges(), 0u);
    for (int i : order)
      ASSERT_TRUE(a.free(parts[i]));
    EXPECT_EQ(a.free_ranges(), 1u);
    EXPECT_EQ(a.largest_free(), 30u);
    EXPECT_TRUE(a.empty());
    auto whole = a.allocate(30);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->offset, 0u);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(OffsetAllocatorFree, merges_with_the_tail_range) {
  offset_allocator a(100);
  auto x = a.allocate(10);
  auto y = a.allocate(10);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(a.free_ranges(), 1u); // the tail [20, 100)
  ASSERT_TRUE(a.free(*y));
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.largest_free(), 90u);
  ASSERT_TRUE(a.free(*x));
  EXPECT_EQ(a.largest_free(), 100u);
}

TEST(OffsetAllocatorFragmentation, hole_that_fits_is_found) {
  // 17 is not a bin size: a 17-granule hole is filed under 16, a 17-granule
  // request starts its O(1) search at 18. The fallback still finds the hole.
  offset_allocator a(17 + 1 + 17 + 1);
  auto h1 = a.allocate(17);
  auto p1 = a.allocate(1);
  auto h2 = a.allocate(17);
  auto p2 = a.allocate(1);
  ASSERT_TRUE(h1 && p1 && h2 && p2);
  ASSERT_TRUE(a.free(*h1));
  ASSERT_TRUE(a.free(*h2));
  EXPECT_EQ(a.largest_free(), 17u);
  auto r1 = a.allocate(17);
  auto r2 = a.allocate(17);
  ASSERT_TRUE(r1 && r2);
  EXPECT_FALSE(a.allocate(1).has_value());
  EXPECT_EQ(a.free_granules(), 0u);
}

TEST(OffsetAllocatorFragmentation, checkerboard_reports_exact_room) {
  const uint32_t n = 4096;
  offset_allocator a(n);
  shadow s(n);
  std::vector<allocation> small;
  // 3-granule allocations, then free every other one: 3-granule holes.
  while (auto x = a.allocate(3)) {
    s.take(x->offset, 3);
    small.push_back(*x);
  }
  EXPECT_EQ(a.free_granules(), n % 3);
  for (size_t i = 0; i < small.size(); i += 2) {
    ASSERT_TRUE(a.free(small[i]));
    s.give(small[i].offset, 3);
  }
  EXPECT_EQ(a.free_granules(), s.free_count());
  EXPECT_EQ(a.largest_free(), s.largest_gap());
  // The last freed block merges with the n % 3 tail; every other hole is 3.
  EXPECT_EQ(s.largest_gap(), 3u + n % 3);
  EXPECT_FALSE(a.allocate(s.largest_gap() + 1).has_value());
  // Every hole can still be used, by requests of 1, 2 and 3.
  uint32_t served = 0;
  for (uint32_t want : {4u, 3u, 2u, 1u}) {
    while (auto x = a.allocate(want)) {
      s.take(x->offset, want);
      served += want;
    }
  }
  EXPECT_EQ(a.free_granules(), 0u);
  EXPECT_EQ(s.free_count(), 0u);
  EXPECT_GT(served, 0u);
}

TEST(OffsetAllocatorFragmentation, many_sizes_then_full_coalescing) {
  const uint32_t n = 1u << 16;
  offset_allocator a(n);
  std::vector<allocation> live;
  uint32_t size = 1;
  while (auto x = a.allocate(size)) {
    live.push_back(*x);
    size = size % 300 + 7;
  }
  // Free in a scrambled order.
  std::mt19937 rng(3);
  std::shuffle(live.begin(), live.end(), rng);
  for (auto& x : live)
    ASSERT_TRUE(a.free(x));
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.free_granules(), n);
  EXPECT_EQ(a.largest_free(), n);
}

TEST(OffsetAllocatorRandom, shadow_bitmap_agrees_over_many_operations) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    const uint32_t n = seed == 4 ? 97 : 2048; // a small odd arena too
    offset_allocator a(n);
    shadow s(n);
    std::mt19937 rng(seed);
    struct live_alloc {
      allocation a;
      uint32_t size;
    };
    std::vector<live_alloc> live;
    for (int op = 0; op < 20000; ++op) {
      const bool do_alloc = live.empty() || rng() % 100 < 55;
      if (do_alloc) {
        // Mostly small, sometimes large requests.
        uint32_t want = rng() % 8 == 0 ? 1 + rng() % (n / 2) : 1 + rng() % 24;
        const uint32_t before = s.largest_gap();
        auto x = a.allocate(want);
        if (x) {
          s.take(x->offset, want);
          ASSERT_EQ(a.allocation_size(*x), want);
          live.push_back({*x, want});
        } else {
          // Refused only when no gap in the shadow can hold it.
          ASSERT_LT(before, want) << "op " << op;
        }
      } else {
        const size_t i = rng() % live.size();
        ASSERT_TRUE(a.free(live[i].a));
        s.give(live[i].a.offset, live[i].size);
        live[i] = live.back();
        live.pop_back();
      }
      ASSERT_EQ(a.free_granules(), s.free_count()) << "op " << op;
      if (op % 64 == 0) {
        ASSERT_EQ(a.largest_free(), s.largest_gap()) << "op " << op;
        ASSERT_EQ(a.free_ranges(), s.gaps()) << "op " << op;
      }
      ASSERT_EQ(a.empty(), live.empty());
    }
    for (auto& l : live)
      ASSERT_TRUE(a.free(l.a));
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.free_ranges(), 1u);
    EXPECT_EQ(a.largest_free(), n);
  }
}

TEST(OffsetAllocatorScale, full_gib_arena_of_4k_granules) {
  // 1 GiB in 4 KiB granules: 262144 nodes.
  const uint32_t n = 262144;
  offset_allocator a(n);
  auto big = a.allocate(n / 2);
  auto rest = a.allocate(n / 2);
  ASSERT_TRUE(big && rest);
  EXPECT_FALSE(a.allocate(1).has_value());
  EXPECT_TRUE(a.free(*big));
  EXPECT_TRUE(a.free(*rest));
  EXPECT_EQ(a.largest_free(), n);
}
