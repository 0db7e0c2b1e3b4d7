// poll_policy: when the UCX engine polls for the control channel, when it
// sleeps on the event fd, and when a wait UCX keeps refusing makes it nap
// (label control_channel).
#include <gtest/gtest.h>

#include "rdma/poll_policy.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using clock_type = poll_policy::clock_type;

namespace {

poll_policy::params test_params() {
  poll_policy::params p;
  p.spin = 500us;
  p.late_yield = 1ms;
  p.back_off = 100ms;
  return p;
}

TEST(ControlChannelPoll, PollsWithinTheSpinAfterMotionAndSleepsPastIt) {
  poll_policy policy{test_params()};
  auto t = clock_type::now() + 1s;
  policy.moved(t);
  EXPECT_TRUE(policy.poll(t));
  EXPECT_TRUE(policy.poll(t + 499us));
  EXPECT_FALSE(policy.poll(t + 500us));
  policy.moved(t + 2ms); // the channel moved again: polling pays again
  EXPECT_TRUE(policy.poll(t + 2ms + 100us));
}

TEST(ControlChannelPoll, AYieldThatComesBackPromptlyKeepsPolling) {
  poll_policy policy{test_params()};
  auto t = clock_type::now() + 1s;
  policy.moved(t);
  policy.yielded(t, t + 300us);
  EXPECT_TRUE(policy.poll(t + 300us));
  policy.yielded(t + 300us, t + 1300us); // at the bound: not late
  policy.moved(t + 1300us);
  EXPECT_TRUE(policy.poll(t + 1300us));
  EXPECT_EQ(policy.backoffs(), 0u);
}

TEST(ControlChannelPoll, ALateYieldSleepsForTheBackOffThenPollsAgain) {
  poll_policy policy{test_params()};
  auto t = clock_type::now() + 1s;
  policy.moved(t);
  auto back = t + 3ms; // a time slice went to another thread
  policy.yielded(t, back);
  EXPECT_EQ(policy.backoffs(), 1u);
  policy.moved(back); // even right after motion: the cores are contended
  EXPECT_FALSE(policy.poll(back));
  EXPECT_FALSE(policy.poll(back + 99ms));
  policy.moved(back + 100ms);
  EXPECT_TRUE(policy.poll(back + 100ms));
  policy.yielded(back + 100ms, back + 105ms); // contended again
  EXPECT_EQ(policy.backoffs(), 2u);
  policy.moved(back + 105ms);
  EXPECT_FALSE(policy.poll(back + 105ms + 10us));
}

TEST(ControlChannelPoll, TheDefaultsPollHalfAMillisecondAndBackOffASecond) {
  poll_policy policy;
  auto t = clock_type::now() + 1s;
  policy.moved(t);
  EXPECT_TRUE(policy.poll(t + 499us));
  EXPECT_FALSE(policy.poll(t + 500us));
  policy.yielded(t, t + 1ms);
  EXPECT_EQ(policy.backoffs(), 0u);
  policy.yielded(t, t + 1001us);
  EXPECT_EQ(policy.backoffs(), 1u);
  policy.moved(t + 1s);
  EXPECT_FALSE(policy.poll(t + 1s));
  policy.moved(t + 1s + 1001us);
  EXPECT_TRUE(policy.poll(t + 1s + 1001us));
}

TEST(ControlChannelPoll, StalledWaitsNapOnlyOnceTheyComeInAStreak) {
  poll_policy::params p = test_params();
  p.stall_streak = 3;
  poll_policy policy{p};
  // Arm refusing once or twice is a consumed signal or a race: no nap.
  EXPECT_FALSE(policy.stalled());
  EXPECT_FALSE(policy.stalled());
  policy.not_stalled(); // a wait that slept or found events
  EXPECT_FALSE(policy.stalled());
  EXPECT_FALSE(policy.stalled());
  EXPECT_TRUE(policy.stalled()); // three in a row: the peer needs the core
  EXPECT_TRUE(policy.stalled()); // and each one after
  EXPECT_EQ(policy.naps(), 2u);
  policy.moved(clock_type::now()); // the channel moved: a new streak
  EXPECT_FALSE(policy.stalled());
  EXPECT_EQ(policy.naps(), 2u);
}

TEST(ControlChannelPoll, TheDefaultsNapFiftyMicrosecondsAfterEightStalls) {
  poll_policy policy;
  for (int i = 0; i < 7; ++i)
    EXPECT_FALSE(policy.stalled()) << i;
  EXPECT_TRUE(policy.stalled());
  EXPECT_EQ(policy.stall_nap(), 50us);
}

} // namespace
