// The kill switch accepts exactly 1, true, yes and on, in any case.
#include <gtest/gtest.h>

#include "runtime/kill_switch.hpp"

using ferry::kill_switch_engaged;

TEST(ProtocolKillSwitch, OnlyFourWordsEngageIt) {
  for (auto v : {"1", "true", "TRUE", "True", "yes", "YeS", "on", "ON"})
    EXPECT_TRUE(kill_switch_engaged(v)) << v;
  for (auto v : {"", "0", "false", "no", "off", "2", "truee", " 1", "y", "enable"})
    EXPECT_FALSE(kill_switch_engaged(v)) << v;
  EXPECT_FALSE(kill_switch_engaged(nullptr));
}
