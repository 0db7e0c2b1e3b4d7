// The endpoint idle reaper's rules (rdma/endpoint_activity.hpp), on a
// clock the test moves by hand.
#include <gtest/gtest.h>

#include "rdma/endpoint_activity.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

struct EndpointActivity : ::testing::Test {
  endpoint_activity::time_point t0 = endpoint_activity::clock_type::now();
};

} // namespace

TEST_F(EndpointActivity, OffByDefaultNothingIsEverIdle) {
  endpoint_activity a{std::nullopt};
  a.opened(1, t0);
  EXPECT_FALSE(a.reaping());
  EXPECT_FALSE(a.scan_due(t0 + 1h));
  EXPECT_TRUE(a.scan(t0 + 1h, false).empty());
}

TEST_F(EndpointActivity, TimeoutRisesToTheFloorAndScansEveryHalfAtMostASecond) {
  endpoint_activity small{100ms};
  EXPECT_EQ(small.timeout(), 500ms);
  EXPECT_EQ(small.scan_period(), 250ms);
  endpoint_activity large{10s};
  EXPECT_EQ(large.timeout(), 10s);
  EXPECT_EQ(large.scan_period(), 1s);
}

TEST_F(EndpointActivity, AnUnusedEndpointIsIdleOneTimeoutAfterItOpened) {
  endpoint_activity a{1s};
  a.opened(7, t0);
  EXPECT_TRUE(a.scan(t0 + 999ms, false).empty());
  EXPECT_EQ(a.scan(t0 + 1s, false), std::vector<uint64_t>{7});
  EXPECT_EQ(a.next_scan(), t0 + 1s + 500ms);
}

TEST_F(EndpointActivity, AnOutstandingOperationIsNeverIdleAndItsCompletionRestartsTheClock) {
  endpoint_activity a{1s};
  a.opened(7, t0);
  a.started(7, t0 + 100ms);
  EXPECT_TRUE(a.scan(t0 + 1h, false).empty()) << "a GET in flight";
  a.finished(7, t0 + 1h);
  EXPECT_TRUE(a.scan(t0 + 1h + 999ms, false).empty());
  EXPECT_EQ(a.scan(t0 + 1h + 1s, false), std::vector<uint64_t>{7});
}

TEST_F(EndpointActivity, DescriptorsOutHoldEveryCloseBack) {
  endpoint_activity a{1s};
  a.opened(7, t0);
  EXPECT_TRUE(a.scan(t0 + 5s, true).empty());
  EXPECT_EQ(a.scan(t0 + 5s, false), std::vector<uint64_t>{7});
}

TEST_F(EndpointActivity, AGoodbyeClosesAtOnceOrAfterTheLastOperation) {
  endpoint_activity a{std::nullopt}; // a goodbye acts with the reaper off too
  a.opened(1, t0);
  a.opened(2, t0);
  EXPECT_TRUE(a.goodbye(1));
  a.started(2, t0);
  EXPECT_FALSE(a.goodbye(2));
  EXPECT_TRUE(a.goodbye_ready().empty());
  a.finished(2, t0 + 1ms);
  EXPECT_EQ(a.goodbye_ready(), std::vector<uint64_t>{2});
  EXPECT_FALSE(a.goodbye(3)) << "no endpoint to that peer: nothing to close";
}

TEST_F(EndpointActivity, ClosedEndpointsAreForgotten) {
  endpoint_activity a{1s};
  a.opened(1, t0);
  a.started(1, t0);
  a.closed(1);
  EXPECT_EQ(a.open(), 0u);
  EXPECT_EQ(a.outstanding(1), 0u);
  a.finished(1, t0); // a late completion of a closed endpoint is harmless
  EXPECT_EQ(a.open(), 0u);
}
