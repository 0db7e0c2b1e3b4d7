// rdma_quarantine: when a block that a GET may still read goes back.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "actors/rendezvous/rdma_quarantine.hpp"

using namespace std::chrono_literals;
using ferry::pinned_block;
using ferry::pinned_ptr;
using ferry::rdma_quarantine;

namespace {

using time_point = rdma_quarantine::time_point;

/// A block whose release sets `*freed` (as the arena pool's token would).
pinned_ptr block(bool* freed, size_t size = 64) {
  static std::vector<char> backing(4096);
  return std::make_shared<pinned_block>(backing.data(), size, 0x1000,
                                        std::make_shared<std::vector<uint8_t>>(), 1,
                                        [freed] { *freed = true; });
}

rdma_quarantine::config cfg() {
  rdma_quarantine::config c;
  c.fence_retry = 100ms;
  c.after_down = 50ms;
  c.max_hold = 10s;
  return c;
}

const time_point t0{std::chrono::seconds{1000}};

} // namespace

TEST(RdmaQuarantine, ABlockGoesBackOnlyAfterAFenceSentAfterItEntered) {
  rdma_quarantine q{cfg()};
  bool freed = false;
  q.add(block(&freed), 64, {7}, t0);
  EXPECT_EQ(q.blocks(), 1u);
  EXPECT_EQ(q.bytes(), 64u);
  EXPECT_EQ(q.collect(t0).blocks(), 0u); // nothing cleared it yet
  EXPECT_FALSE(freed);
  auto fences = q.fences_due(t0);
  ASSERT_EQ(fences, std::vector<uint64_t>{7});
  EXPECT_TRUE(q.fences_due(t0).empty()) << "one fence per holder in flight";
  // A second block enters while the fence is out: that fence does not clear it.
  bool freed2 = false;
  q.add(block(&freed2), 32, {7}, t0 + 1ms);
  q.fence_answered(7, true, t0 + 2ms);
  auto r = q.collect(t0 + 2ms);
  EXPECT_EQ(r.by_fence, 1u);
  EXPECT_EQ(r.bytes, 64u);
  EXPECT_TRUE(freed);
  EXPECT_FALSE(freed2);
  EXPECT_EQ(q.bytes(), 32u);
  // The next fence clears it.
  ASSERT_EQ(q.fences_due(t0 + 3ms), std::vector<uint64_t>{7});
  q.fence_answered(7, true, t0 + 4ms);
  EXPECT_EQ(q.collect(t0 + 4ms).by_fence, 1u);
  EXPECT_TRUE(freed2);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
}

TEST(RdmaQuarantine, AFailedFenceIsSentAgainAfterTheRetryPeriod) {
  rdma_quarantine q{cfg()};
  bool freed = false;
  q.add(block(&freed), 64, {3}, t0);
  ASSERT_EQ(q.fences_due(t0).size(), 1u);
  q.fence_answered(3, false, t0 + 5ms);
  EXPECT_EQ(q.collect(t0 + 5ms).blocks(), 0u);
  EXPECT_TRUE(q.fences_due(t0 + 50ms).empty());
  EXPECT_TRUE(q.fences_due(t0 + 104ms).empty());
  ASSERT_EQ(q.fences_due(t0 + 105ms), std::vector<uint64_t>{3});
  q.fence_answered(3, true, t0 + 106ms);
  EXPECT_EQ(q.collect(t0 + 106ms).by_fence, 1u);
  EXPECT_TRUE(freed);
}

TEST(RdmaQuarantine, EveryHolderMustBeClearedAndOneThatWentAwayIsClearedAfterTheGrace) {
  rdma_quarantine q{cfg()};
  bool freed = false;
  q.add(block(&freed), 64, {1, 2}, t0);
  auto fences = q.fences_due(t0);
  EXPECT_EQ(fences, (std::vector<uint64_t>{1, 2}));
  q.fence_answered(1, true, t0 + 1ms);
  EXPECT_EQ(q.collect(t0 + 1ms).blocks(), 0u);
  q.holder_gone(2, t0 + 2ms);
  // The fence that was out before it went still clears what it covered.
  q.fence_answered(2, true, t0 + 3ms);
  EXPECT_EQ(q.collect(t0 + 3ms).blocks(), 1u);
  EXPECT_TRUE(freed);

  // A holder that goes with its fence unanswered: cleared after_down later.
  bool freed2 = false;
  q.add(block(&freed2), 16, {5}, t0 + 10ms);
  ASSERT_EQ(q.fences_due(t0 + 10ms).size(), 1u);
  q.holder_gone(5, t0 + 11ms);
  EXPECT_TRUE(q.fences_due(t0 + 12ms).empty()) << "no fence to a holder that went";
  EXPECT_EQ(q.collect(t0 + 60ms).blocks(), 0u);
  auto r = q.collect(t0 + 61ms);
  EXPECT_EQ(r.by_peer_down, 1u);
  EXPECT_TRUE(freed2);
  q.fence_answered(5, true, t0 + 70ms); // late: nothing left to clear
  EXPECT_TRUE(q.empty());
}

TEST(RdmaQuarantine, ABlockThatWaitedMaxHoldIsHandedOutForcedWithItsHolders) {
  rdma_quarantine q{cfg()};
  bool freed = false;
  q.add(block(&freed), 64, {4, 9}, t0);
  ASSERT_EQ(q.fences_due(t0).size(), 2u);
  q.fence_answered(4, true, t0 + 1ms); // 9 never answers
  EXPECT_EQ(q.collect(t0 + 9s).blocks(), 0u);
  auto r = q.collect(t0 + 10s);
  ASSERT_EQ(r.forced.size(), 1u);
  EXPECT_EQ(r.forced[0].holders, std::vector<uint64_t>{9});
  EXPECT_EQ(r.forced[0].bytes, 64u);
  EXPECT_EQ(r.bytes, 64u);
  EXPECT_FALSE(freed) << "the caller lets it go after closing the endpoints";
  r.forced.clear();
  EXPECT_TRUE(freed);
  EXPECT_TRUE(q.empty());
}

TEST(RdmaQuarantine, ABlockWithNoHolderIsNotKept) {
  rdma_quarantine q{cfg()};
  bool freed = false;
  q.add(block(&freed), 64, {}, t0);
  EXPECT_TRUE(freed);
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.fences_due(t0).empty());
  q.fence_answered(1, true, t0); // never asked: ignored
  EXPECT_EQ(q.collect(t0).blocks(), 0u);
}
