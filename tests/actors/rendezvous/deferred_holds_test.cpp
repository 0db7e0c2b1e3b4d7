// deferred_holds: the finished gets' holds the consumer service keeps until
// they are due.
#include <gtest/gtest.h>

#include "actors/rendezvous/deferred_holds.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

using clock_type = deferred_holds::clock_type;
const clock_type::time_point t0{};

deferred_holds::entry at(uint64_t object, uint64_t lease, std::chrono::milliseconds due) {
  return {data_handle{7, object}, lease, {}, t0 + due};
}

} // namespace

TEST(DeferredHolds, DueHoldsGoInTimeAndEndedLeasesNever) {
  deferred_holds holds;
  holds.add(at(1, 10, 250ms));
  holds.add(at(2, 11, 100ms));
  holds.add(at(1, 12, 300ms)); // another lease of the same handle
  EXPECT_EQ(holds.size(), 3u);
  EXPECT_EQ(*holds.next_due(), t0 + 100ms);
  EXPECT_TRUE(holds.take_due(t0 + 99ms).empty());
  auto first = holds.take_due(t0 + 100ms);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].lease_id, 11u);
  // The caller released lease 10: its hold is dropped, once.
  EXPECT_TRUE(holds.cancel(data_handle{7, 1}, 10));
  EXPECT_FALSE(holds.cancel(data_handle{7, 1}, 10));
  EXPECT_FALSE(holds.cancel(data_handle{8, 1}, 12)); // another owner's handle
  auto rest = holds.take_due(t0 + 1s);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].lease_id, 12u);
  EXPECT_EQ(holds.size(), 0u);
  EXPECT_FALSE(holds.next_due());
}

TEST(DeferredHolds, StoppingSendsEveryWaitingHold) {
  deferred_holds holds;
  holds.add(at(1, 1, 1h));
  holds.add(at(2, 2, 2h));
  EXPECT_EQ(holds.take_all().size(), 2u);
  EXPECT_EQ(holds.size(), 0u);
}

TEST(DeferredHolds, ManyHoldsGoSoonestFirstAndARepeatReplacesItsDueTime) {
  deferred_holds holds;
  for (uint64_t i = 0; i < 100; ++i) // due in an order unlike the leases'
    holds.add(at(1, i, std::chrono::milliseconds{(i * 37) % 100}));
  holds.add(at(1, 5, 500ms)); // lease 5 again, later: only the later time stands
  EXPECT_EQ(holds.size(), 100u);
  EXPECT_TRUE(holds.cancel(data_handle{7, 1}, 0)); // due at 0 ms
  EXPECT_EQ(*holds.next_due(), t0 + 1ms);
  auto due = holds.take_due(t0 + 99ms);
  ASSERT_EQ(due.size(), 98u); // all but lease 0 (cancelled) and lease 5 (moved)
  for (size_t i = 1; i < due.size(); ++i)
    EXPECT_LE(due[i - 1].due, due[i].due);
  for (auto& e : due)
    EXPECT_NE(e.lease_id, 5u);
  EXPECT_EQ(*holds.next_due(), t0 + 500ms);
  auto last = holds.take_due(t0 + 500ms);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].lease_id, 5u);
  EXPECT_EQ(holds.size(), 0u);
}
