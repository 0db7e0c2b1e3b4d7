// shutdown_deadline: one budget shared by node::stop's steps.
#include <gtest/gtest.h>

#include "runtime/shutdown_deadline.hpp"

using namespace ferry;
using namespace std::chrono_literals;

TEST(ShutdownDeadline, EachStepGetsWhatIsLeft) {
  auto t0 = shutdown_deadline::clock::now();
  shutdown_deadline d{1000ms, 100ms, t0};
  EXPECT_EQ(d.left(t0), 1000ms);
  EXPECT_EQ(d.left(t0 + 300ms), 700ms);
  EXPECT_FALSE(d.passed(t0 + 999ms));
}

TEST(ShutdownDeadline, AStepAfterTheDeadlineStillGetsTheFloor) {
  auto t0 = shutdown_deadline::clock::now();
  shutdown_deadline d{1000ms, 100ms, t0};
  EXPECT_EQ(d.left(t0 + 950ms), 100ms);
  EXPECT_EQ(d.left(t0 + 5s), 100ms);
  EXPECT_TRUE(d.passed(t0 + 1000ms));
}
