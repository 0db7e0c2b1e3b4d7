// The arena pool over a fake region mapper: growth, dedicated arenas, the
// budget in whole pages, reclamation and the warm floor.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "rdma/arena_pool.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

struct fake_region : mapped_region {
  explicit fake_region(uint64_t n, int* live)
    : bytes(static_cast<char*>(std::aligned_alloc(4096, n))), n(n), live(live) {
    ++*live;
  }
  ~fake_region() override {
    std::free(bytes);
    --*live;
  }
  char* data() const override { return bytes; }
  uint64_t size() const override { return n; }
  uint64_t address() const override { return reinterpret_cast<uintptr_t>(bytes); }
  const std::vector<uint8_t>& rkey() const override { return key; }
  uint64_t pinned_bytes() const override { return n; }
  char* bytes;
  uint64_t n;
  int* live;
  std::vector<uint8_t> key{1, 2, 3};
};

struct ArenaPool : ::testing::Test {
  arena_pool make(arena_pool_config cfg, uint64_t budget_bytes) {
    budget = std::make_unique<registered_budget>(budget_bytes);
    return arena_pool{cfg,
                      [this](uint64_t n) -> std::variant<std::unique_ptr<mapped_region>, std::string> {
                        mapped_sizes.push_back(n);
                        if (fail_maps)
                          return std::string{"mapping refused"};
                        return std::make_unique<fake_region>(n, &live);
                      },
                      *budget};
  }
  static arena_pool_config small() {
    arena_pool_config c;
    c.initial_arena_bytes = 64 * KiB;
    c.max_arena_bytes = 256 * KiB;
    c.dedicated_arena_min = 128 * KiB;
    c.retain_arena_bytes = 64 * KiB;
    return c;
  }
  std::unique_ptr<registered_budget> budget;
  std::vector<uint64_t> mapped_sizes;
  bool fail_maps = false;
  int live = 0;
};

pool_grant grant(std::variant<pool_grant, pool_refusal> r) {
  EXPECT_TRUE(std::holds_alternative<pool_grant>(r));
  return std::get<pool_grant>(r);
}

} // namespace

TEST_F(ArenaPool, GrowsGeometricallyAndHandsOutDisjointBlocks) {
  auto pool = make(small(), 1 << 30);
  std::vector<pool_grant> grants;
  for (int i = 0; i < 40; ++i)
    grants.push_back(grant(pool.allocate(12 * KiB, true)));
  EXPECT_EQ(mapped_sizes, (std::vector<uint64_t>{64 * KiB, 128 * KiB, 256 * KiB, 256 * KiB}));
  std::set<uint64_t> starts;
  for (auto& g : grants) {
    EXPECT_EQ(g.size, 12 * KiB);
    EXPECT_TRUE(starts.insert(g.address).second);
    EXPECT_TRUE(pool.covers(g.address, g.size));
    EXPECT_FALSE(pool.covers(g.address, g.size + 4097));
    g.data[0] = 'x'; // writable
  }
  EXPECT_EQ(pool.registered_bytes(), (64 + 128 + 256 + 256) * KiB);
  EXPECT_EQ(budget->used(), pool.registered_bytes());
  for (auto& g : grants)
    pool.free(g.arena_id, g.token);
  EXPECT_EQ(pool.live_blocks(), 0u);
  EXPECT_EQ(live, 4); // pooled arenas stay mapped without reclaim_after
}

TEST_F(ArenaPool, DedicatedArenasAreUnmappedWhenFreed) {
  auto pool = make(small(), 1 << 30);
  auto g = grant(pool.allocate(200 * KiB, true));
  EXPECT_EQ(mapped_sizes.back(), 200 * KiB);
  EXPECT_EQ(live, 1);
  EXPECT_EQ(budget->used(), 200 * KiB);
  pool.free(g.arena_id, g.token);
  EXPECT_EQ(budget->used(), 0u);
  EXPECT_EQ(live, 1); // the grant's share keeps it mapped (as a block's does)
  g.mapping.reset();
  EXPECT_EQ(live, 0);
  // Repeated large staging never exhausts the budget.
  for (int i = 0; i < 100; ++i) {
    auto d = grant(pool.allocate(300 * KiB, true));
    pool.free(d.arena_id, d.token);
  }
  EXPECT_EQ(budget->used(), 0u);
}

TEST_F(ArenaPool, UnmapAllAtStopGivesTheWholeBudgetBackButAHeldBlockKeepsItsMapping) {
  auto pool = make(small(), 1 << 30);
  auto held = grant(pool.allocate(12 * KiB, true));
  auto freed = grant(pool.allocate(200 * KiB, true)); // a dedicated arena
  pool.free(freed.arena_id, freed.token);
  freed.mapping.reset();
  EXPECT_EQ(live, 1);
  held.data[0] = 'h';
  EXPECT_EQ(pool.unmap_all(), 1u);
  EXPECT_EQ(pool.arena_count(), 0u);
  EXPECT_EQ(budget->used(), 0u);
  EXPECT_EQ(live, 1); // the held block still reads its bytes
  EXPECT_EQ(held.data[0], 'h');
  held.mapping.reset();
  EXPECT_EQ(live, 0);
}

TEST_F(ArenaPool, BudgetIsCountedInPagesAndRefusesPastTheCap) {
  auto pool = make(small(), 100 * KiB);
  auto g = grant(pool.allocate(1, true)); // maps the 64 KiB arena
  EXPECT_EQ(g.size, 4 * KiB);
  EXPECT_EQ(budget->used(), 64 * KiB);
  // The next arena (128 KiB) does not fit the remaining 36 KiB.
  std::vector<pool_grant> more;
  for (int i = 0; i < 15; ++i)
    more.push_back(grant(pool.allocate(4 * KiB, true)));
  auto r = pool.allocate(4 * KiB, true);
  ASSERT_TRUE(std::holds_alternative<pool_refusal>(r));
  EXPECT_EQ(std::get<pool_refusal>(r), pool_refusal::budget);
  EXPECT_EQ(budget->used(), 64 * KiB); // the refusal charged nothing
  auto d = pool.allocate(200 * KiB, true);
  EXPECT_EQ(std::get<pool_refusal>(d), pool_refusal::budget);
}

TEST(RegisteredBudget, PageRoundingNeverWrapsAndHugeSizesAreRefused) {
  constexpr auto top = ~uint64_t{0};
  EXPECT_EQ(round_to_pages(0), 0u);
  EXPECT_EQ(round_to_pages(1), page_bytes);
  EXPECT_EQ(round_to_pages(page_bytes), page_bytes);
  EXPECT_EQ(round_to_pages(top), top / page_bytes * page_bytes);
  EXPECT_EQ(round_to_pages(top - page_bytes), top / page_bytes * page_bytes);
  registered_budget b{1 << 20};
  EXPECT_FALSE(b.try_reserve(top));
  EXPECT_FALSE(b.try_reserve(top - 1));
  EXPECT_EQ(b.used(), 0u);
  EXPECT_TRUE(b.try_reserve(1));
  EXPECT_EQ(b.used(), page_bytes);
}

TEST(ArenaPoolGranules, CountsWholeGranulesAndNeverWraps) {
  constexpr auto top = ~uint64_t{0};
  constexpr auto g = arena_pool_config::granule;
  struct row {
    uint64_t bytes, granules;
  };
  const row rows[] = {
    {0, 0}, {1, 1}, {g - 1, 1}, {g, 1}, {g + 1, 2},
    {top, top / g + 1},         // (top + g - 1) / g would wrap to 0
    {top - g + 2, top / g + 1}, // the first size whose rounding wraps
    {top - (top % g), top / g}, // a whole number of granules below 2^64
  };
  for (const auto& r : rows)
    EXPECT_EQ(granules_for(r.bytes), r.granules) << r.bytes;
}

TEST_F(ArenaPool, AHugeRequestIsRefusedNotWrapped) {
  auto pool = make(small(), 100 * KiB);
  for (uint64_t n : {~uint64_t{0}, ~uint64_t{0} - 4095, ~uint64_t{0} - 4094,
                     uint64_t{1} << 63, (uint64_t{0xFFFFFFF0} + 1) * 4096}) {
    auto r = pool.allocate(n, true);
    ASSERT_TRUE(std::holds_alternative<pool_refusal>(r)) << n;
  }
  EXPECT_EQ(budget->used(), 0u);
}

TEST_F(ArenaPool, NoMappingWhenNotAllowedOrWhenTheMapperFails) {
  auto pool = make(small(), 1 << 30);
  auto r = pool.allocate(4 * KiB, false);
  EXPECT_EQ(std::get<pool_refusal>(r), pool_refusal::pool_exhausted);
  EXPECT_TRUE(mapped_sizes.empty());
  fail_maps = true;
  r = pool.allocate(4 * KiB, true);
  EXPECT_EQ(std::get<pool_refusal>(r), pool_refusal::pool_exhausted);
  EXPECT_EQ(budget->used(), 0u);
  fail_maps = false;
  auto g = grant(pool.allocate(4 * KiB, true));
  // Now an arena exists: a caller that may not map uses it.
  auto h = grant(pool.allocate(4 * KiB, false));
  EXPECT_EQ(h.arena_id, g.arena_id);
}

TEST_F(ArenaPool, ReclaimUnmapsEmptyArenasNewestFirstAndKeepsTheFloor) {
  auto cfg = small();
  cfg.reclaim_after = 100ms;
  auto pool = make(cfg, 1 << 30);
  std::vector<pool_grant> grants;
  for (int i = 0; i < 30; ++i)
    grants.push_back(grant(pool.allocate(12 * KiB, true)));
  ASSERT_EQ(pool.arena_count(), 3u); // 64 + 128 + 256 KiB
  auto t0 = arena_pool::clock_type::now();
  EXPECT_EQ(pool.reclaim(t0 + 1s), 0u); // all busy
  for (auto& g : grants)
    pool.free(g.arena_id, g.token, t0);
  EXPECT_EQ(pool.reclaim(t0 + 50ms), 0u); // not idle long enough
  EXPECT_EQ(pool.reclaim(t0 + 100ms), 2u);
  ASSERT_EQ(pool.arena_count(), 1u);
  EXPECT_EQ(pool.registered_bytes(), 64 * KiB); // the small first arena stays
  EXPECT_EQ(budget->used(), 64 * KiB);
}

TEST_F(ArenaPool, EachArenaSaysItsSizeBlocksAndHowLongItHasBeenEmpty) {
  auto pool = make(small(), 1 << 30);
  auto a = grant(pool.allocate(12 * KiB, true));
  auto b = grant(pool.allocate(200 * KiB, true)); // dedicated
  auto t0 = arena_pool::clock_type::now();
  auto busy = pool.arenas(t0);
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_EQ(busy[0].bytes, 64 * KiB);
  EXPECT_FALSE(busy[0].dedicated);
  EXPECT_EQ(busy[0].blocks, 1u);
  EXPECT_FALSE(busy[0].empty_for);
  EXPECT_TRUE(busy[1].dedicated);
  pool.free(a.arena_id, a.token, t0);
  auto idle = pool.arenas(t0 + 40ms);
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_EQ(idle[0].blocks, 0u);
  ASSERT_TRUE(idle[0].empty_for);
  EXPECT_EQ(*idle[0].empty_for, 40ms);
  pool.free(b.arena_id, b.token, t0); // a dedicated arena goes at once
  EXPECT_EQ(pool.arenas(t0).size(), 1u);
}

TEST_F(ArenaPool, TheSweepIsArmedOnlyWhileSomethingCanBeReclaimed) {
  auto cfg = small();
  auto pool_off = make(cfg, 1 << 30);
  auto g = grant(pool_off.allocate(12 * KiB, true));
  pool_off.free(g.arena_id, g.token);
  EXPECT_FALSE(pool_off.reclaimable()) << "reclaim_after is off";

  cfg.reclaim_after = 100ms;
  auto pool = make(cfg, 1 << 30);
  std::vector<pool_grant> grants;
  for (int i = 0; i < 10; ++i) // 64 + 128 KiB arenas
    grants.push_back(grant(pool.allocate(12 * KiB, true)));
  ASSERT_EQ(pool.arena_count(), 2u);
  EXPECT_FALSE(pool.reclaimable()) << "every arena has a block";
  for (auto& x : grants)
    pool.free(x.arena_id, x.token);
  EXPECT_TRUE(pool.reclaimable());
  pool.reclaim(arena_pool::clock_type::now() + 1s);
  EXPECT_EQ(pool.arena_count(), 1u);
  EXPECT_FALSE(pool.reclaimable()) << "only the warm floor is left";
}

TEST_F(ArenaPool, TheSweepPeriodIsHalfTheSmallerOfLeaseTimeoutAndReclaimAfter) {
  auto cfg = small();
  cfg.lease_timeout = 30s;
  cfg.reclaim_after = 4s;
  EXPECT_EQ(make(cfg, 1 << 30).reclaim_period(), 2s);
  cfg.lease_timeout = 1s;
  EXPECT_EQ(make(cfg, 1 << 30).reclaim_period(), 500ms);
  cfg.lease_timeout = 2ms;
  EXPECT_EQ(make(cfg, 1 << 30).reclaim_period(), 10ms) << "the 10 ms floor";
}

TEST_F(ArenaPool, UtilizationIsGrantedOverMappedBytes) {
  auto pool = make(small(), 1 << 30);
  EXPECT_EQ(pool.mapped_bytes(), 0u);
  auto a = grant(pool.allocate(16 * KiB, true));
  auto b = grant(pool.allocate(1, true)); // one granule
  EXPECT_EQ(pool.mapped_bytes(), 64 * KiB);
  EXPECT_EQ(pool.granted_bytes(), 20 * KiB);
  pool.free(a.arena_id, a.token);
  EXPECT_EQ(pool.granted_bytes(), 4 * KiB);
  pool.free(b.arena_id, b.token);
  EXPECT_EQ(pool.granted_bytes(), 0u);
  EXPECT_EQ(pool.mapped_bytes(), 64 * KiB) << "the empty arena stays mapped";
}
