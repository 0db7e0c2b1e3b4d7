// The chunk pool's accounting: every chunk that exists counts, exhaustion
// answers at once, and only a clean construction failure or a clean close
// frees a slot.
#include "staging/chunk_pool.hpp"

#include <gtest/gtest.h>

#include "protocol/errors.hpp"

namespace {

using namespace ferry::staging;
using action = chunk_pool::action;
using outcome = chunk_pool::outcome;

const chunk_key a{1, -1};
const chunk_key b{2, 0};

TEST(CudaChunkPool, ExhaustionAnswersAtOnceAndEveryLiveStateCounts) {
  chunk_pool pool{3};
  auto g1 = *pool.checkout(a); // constructing
  auto g2 = *pool.checkout(a);
  pool.constructed(g2.id, outcome::ok); // active
  auto g3 = *pool.checkout(a);
  pool.constructed(g3.id, outcome::failed_uncertain); // retained
  auto refused = pool.checkout(a);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(ferry::is(refused.error(), ferry::errc::resource_exhausted));
  auto s = pool.stats();
  EXPECT_EQ(s.constructing, 1u);
  EXPECT_EQ(s.active, 1u);
  EXPECT_EQ(s.retained, 1u);
  EXPECT_EQ(s.exhausted, 1u);
  EXPECT_EQ(g1.what, action::construct);
}

TEST(CudaChunkPool, AnIdleChunkOfTheSameKeyIsReusedWithItsNativeState) {
  chunk_pool pool{2};
  auto g = *pool.checkout(a);
  auto native = std::make_shared<int>(7);
  pool.constructed(g.id, outcome::ok, native);
  pool.checkin(g.id, true);
  auto again = *pool.checkout(a);
  EXPECT_EQ(again.what, action::reuse);
  EXPECT_EQ(again.id, g.id);
  EXPECT_EQ(again.native, native);
  EXPECT_EQ(pool.stats().reuses, 1u);
  EXPECT_EQ(pool.stats().allocations, 1u);
}

TEST(CudaChunkPool, AFullPoolMovesAnIdleChunkOfAnotherKeyOnlyAfterItsRelease) {
  chunk_pool pool{1};
  auto g = *pool.checkout(a);
  pool.constructed(g.id, outcome::ok, std::make_shared<int>(1));
  pool.checkin(g.id, true);
  auto m = *pool.checkout(b);
  EXPECT_EQ(m.what, action::move);
  EXPECT_EQ(m.old_key, a);
  EXPECT_EQ(pool.stats().closing, 1u); // still counted while it is released
  EXPECT_FALSE(pool.checkout(b));
  pool.moved(m.id, outcome::ok);
  EXPECT_EQ(pool.stats().constructing, 1u);
  pool.constructed(m.id, outcome::ok, std::make_shared<int>(2));
  pool.checkin(m.id, true);
  EXPECT_EQ(pool.checkout(b)->what, action::reuse); // now bound to b
}

TEST(CudaChunkPool, AFailedMoveKeepsTheChunkRetained) {
  chunk_pool pool{1};
  auto g = *pool.checkout(a);
  pool.constructed(g.id, outcome::ok, std::make_shared<int>(1));
  pool.checkin(g.id, true);
  auto m = *pool.checkout(b);
  pool.moved(m.id, outcome::failed_uncertain);
  EXPECT_EQ(pool.stats().retained, 1u);
  EXPECT_FALSE(pool.checkout(a));
}

TEST(CudaChunkPool, ACleanConstructionFailureFreesTheSlotAnUncertainOneDoesNot) {
  chunk_pool pool{1};
  auto g = *pool.checkout(a);
  pool.constructed(g.id, outcome::failed_clean);
  EXPECT_EQ(pool.stats().counted(), 0u);
  auto g2 = *pool.checkout(a);
  pool.constructed(g2.id, outcome::failed_uncertain);
  EXPECT_EQ(pool.stats().retained, 1u);
  EXPECT_FALSE(pool.checkout(a));
}

TEST(CudaChunkPool, AChunkWhoseCopyDidNotDrainIsRetained) {
  chunk_pool pool{2};
  auto g = *pool.checkout(a);
  pool.constructed(g.id, outcome::ok);
  pool.checkin(g.id, false);
  EXPECT_EQ(pool.stats().retained, 1u);
  pool.checkin(g.id, true); // a retained chunk never comes back
  EXPECT_EQ(pool.stats().idle, 0u);
}

TEST(CudaChunkPool, ARepeatedCloseNeverFreesTwiceAndAFailedCloseKeepsTheCharge) {
  chunk_pool pool{2};
  auto g1 = *pool.checkout(a);
  pool.constructed(g1.id, outcome::ok);
  pool.checkin(g1.id, true);
  auto g2 = *pool.checkout(b);
  pool.constructed(g2.id, outcome::ok);
  pool.checkin(g2.id, true);
  EXPECT_TRUE(pool.begin_close(g1.id));
  EXPECT_FALSE(pool.begin_close(g1.id)); // already closing: no second free
  pool.closed(g1.id, outcome::ok);
  EXPECT_FALSE(pool.begin_close(g1.id)); // gone
  auto closing = pool.begin_close_idle();
  ASSERT_EQ(closing.size(), 1u);
  EXPECT_EQ(closing[0].first, g2.id);
  EXPECT_TRUE(pool.begin_close_idle().empty());
  pool.closed(g2.id, outcome::failed_uncertain);
  EXPECT_EQ(pool.stats().retained, 1u);
  EXPECT_EQ(pool.stats().counted(), 1u);
}

} // namespace
