// The consumer's warm GET destination: which blocks are kept, which GETs
// take the kept one, and when it goes back to the pool (misfit, idle,
// replaced, too large).
#include <gtest/gtest.h>

#include "rdma/warm_destination.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t MiB = 1 << 20;

struct Blocks {
  int freed = 0;
  std::vector<char> backing = std::vector<char>(16);
  pinned_ptr make(uint64_t size) {
    return std::make_shared<pinned_block>(backing.data(), size, 0x1000, nullptr, 1,
                                          [this] { ++freed; });
  }
};

warm_destination_config cfg() {
  warm_destination_config c;
  c.min_bytes = 64 * MiB;
  c.max_bytes = 256 * MiB;
  c.idle = 2000ms;
  return c;
}

} // namespace

TEST(WarmDestination, AKeptBlockServesTheNextGetOfAboutItsSize) {
  Blocks b;
  warm_destination w{cfg()};
  w.keep(b.make(80 * MiB));
  EXPECT_EQ(b.freed, 0);
  EXPECT_EQ(w.stats().held_bytes, 80 * MiB);
  auto got = w.take(70 * MiB);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), 80 * MiB);
  EXPECT_FALSE(w.take(70 * MiB)); // one block, one GET
  got.reset();
  EXPECT_EQ(b.freed, 1); // not given back: returns to the pool
  auto s = w.stats();
  EXPECT_EQ(s.kept, 1u);
  EXPECT_EQ(s.reused, 1u);
  EXPECT_EQ(s.held_bytes, 0u);
}

TEST(WarmDestination, SmallGetsLeaveItAndMisfitsDropIt) {
  Blocks b;
  warm_destination w{cfg()};
  w.keep(b.make(128 * MiB));
  EXPECT_FALSE(w.take(1 * MiB)); // below min: pooled arenas serve it
  EXPECT_EQ(b.freed, 0);
  EXPECT_FALSE(w.take(64 * MiB)); // fits, but wastes over half: dropped
  EXPECT_EQ(b.freed, 1);
  w.keep(b.make(64 * MiB));
  EXPECT_FALSE(w.take(100 * MiB)); // too small for it: dropped
  EXPECT_EQ(b.freed, 2);
  EXPECT_EQ(w.stats().dropped, 2u);
}

TEST(WarmDestination, KeepsOnlyBlocksInItsSizeRangeAndOnlyTheNewest) {
  Blocks b;
  warm_destination w{cfg()};
  w.keep(b.make(1 * MiB));   // pooled size: released at once
  w.keep(b.make(512 * MiB)); // over max_bytes: released at once
  EXPECT_EQ(b.freed, 2);
  w.keep(b.make(64 * MiB));
  w.keep(b.make(80 * MiB)); // replaces the first
  EXPECT_EQ(b.freed, 3);
  auto got = w.take(80 * MiB);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), 80 * MiB);
}

TEST(WarmDestination, AnIdleBlockExpires) {
  Blocks b;
  warm_destination w{cfg()};
  auto t0 = warm_destination::clock_type::now();
  w.keep(b.make(64 * MiB), t0);
  EXPECT_FALSE(w.expire(t0 + 1999ms));
  EXPECT_EQ(b.freed, 0);
  EXPECT_TRUE(w.expire(t0 + 2000ms));
  EXPECT_EQ(b.freed, 1);
  EXPECT_FALSE(w.take(64 * MiB));
  w.keep(b.make(64 * MiB));
  w.clear();
  EXPECT_EQ(b.freed, 2);
}

TEST(WarmDestination, ASmallSlotKeepsOneSmallBlockForTheNextSmallGet) {
  Blocks b;
  warm_destination w{cfg()}; // small_max_bytes: 512 KiB by default
  w.keep(b.make(4096));
  w.keep(b.make(96 * MiB)); // the large slot is separate
  EXPECT_EQ(b.freed, 0);
  EXPECT_EQ(w.stats().held_bytes, 96 * MiB + 4096);
  EXPECT_FALSE(w.take(512 * 1024)); // does not fit the small block: left alone
  EXPECT_EQ(b.freed, 0);
  auto got = w.take(4000);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), 4096u);
  EXPECT_FALSE(w.take(4000)); // one small block, one GET
  w.keep(std::move(got));
  w.keep(b.make(8192)); // replaces it
  EXPECT_EQ(b.freed, 1);
  EXPECT_TRUE(w.expire(std::chrono::steady_clock::now() + 3s));
  EXPECT_EQ(b.freed, 3) << "both slots expire";
}
