// member_table: the membership rules without actors or sockets.
#include <gtest/gtest.h>

#include <algorithm>

#include "actors/cluster/member_table.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using clock_type = member_table::clock;

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

TEST(MemberTable, JoinTargetsAreDueAtOnceAndNotTwiceWhileInFlight) {
  member_table t{{"a:1", "b:2"}};
  auto now = clock_type::now();
  EXPECT_FALSE(t.ready());
  auto due = t.take_due(now);
  EXPECT_EQ(due.size(), 2u);
  EXPECT_TRUE(t.take_due(now).empty()); // in flight
  EXPECT_FALSE(t.next_due());
  t.dialled("a:1", 11, false);
  EXPECT_FALSE(t.ready());
  EXPECT_EQ(t.unreached(), std::vector<std::string>{"b:2"});
  t.dialled("b:2", 22, false);
  EXPECT_TRUE(t.ready());
  EXPECT_EQ(t.members(), 2u);
  EXPECT_TRUE(t.take_due(now + 1h).empty()); // members are not dialled again
}

TEST(MemberTable, NoJoinTargetsIsReady) {
  member_table t{{}};
  EXPECT_TRUE(t.ready());
  EXPECT_TRUE(t.take_due(clock_type::now()).empty());
}

TEST(MemberTable, AFailedJoinIsRetriedWithABackoffThatStopsAtTheCap) {
  member_table::limits lim;
  lim.first_retry = 100ms;
  lim.max_retry = 400ms;
  member_table t{{"seed:7000"}, lim};
  auto now = clock_type::now();
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(t.take_due(now), std::vector<std::string>{"seed:7000"});
    t.dial_failed("seed:7000", now);
    auto next = t.next_due();
    ASSERT_TRUE(next);
    waits.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(*next - now));
    EXPECT_TRUE(t.take_due(now).empty()); // not before its time
    now = *next;
  }
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{100ms, 200ms, 400ms, 400ms, 400ms}));
  EXPECT_FALSE(t.ready()); // a join target is never given up
}

TEST(MemberTable, ALearnedEndpointIsDroppedAfterItsAttempts) {
  member_table::limits lim;
  lim.learned_attempts = 2;
  member_table t{{}, lim};
  auto now = clock_type::now();
  EXPECT_TRUE(t.learn("x:1", now));
  EXPECT_FALSE(t.learn("x:1", now)); // known already
  ASSERT_EQ(t.take_due(now), std::vector<std::string>{"x:1"});
  t.dial_failed("x:1", now);
  ASSERT_TRUE(t.next_due());
  ASSERT_EQ(t.take_due(*t.next_due()), std::vector<std::string>{"x:1"});
  t.dial_failed("x:1", now);
  EXPECT_FALSE(t.next_due()); // forgotten
  EXPECT_TRUE(t.learn("x:1", now)); // and may be learned afresh
}

TEST(MemberTable, ThisNodeIsNeverDialled) {
  member_table t{{"me:7000", "other:7000"}};
  t.set_self("me:7000");
  auto now = clock_type::now();
  EXPECT_FALSE(t.learn("me:7000", now));
  auto due = t.take_due(now);
  EXPECT_EQ(due, std::vector<std::string>{"other:7000"});
  // A name of ours we did not know (another host name) is found by dialling.
  EXPECT_TRUE(t.learn("me.example:7000", now));
  ASSERT_EQ(t.take_due(now), std::vector<std::string>{"me.example:7000"});
  t.dialled("me.example:7000", 0, true);
  EXPECT_FALSE(t.learn("me.example:7000", now));
  t.dialled("other:7000", 5, false);
  EXPECT_TRUE(t.ready()); // me:7000 counts as reached
}

TEST(MemberTable, AJoinTargetWhoseMemberLeftIsDialledAgainAtOnce) {
  member_table t{{"seed:7000"}};
  auto now = clock_type::now();
  t.take_due(now);
  t.dialled("seed:7000", 9, false);
  t.joined(9, "seed-advertised:7000"); // its hello named it otherwise
  t.learn("peer:7001", now);
  t.take_due(now);
  t.dialled("peer:7001", 10, false);
  EXPECT_EQ(t.members(), 2u);
  t.left(9, now + 1s);
  auto due = t.take_due(now + 1s);
  EXPECT_TRUE(has(due, "seed:7000")); // a restarted seed is found again
  EXPECT_FALSE(has(due, "seed-advertised:7000"));
  EXPECT_TRUE(t.ready()); // it was reached once: readiness stays
  t.left(10, now + 1s);
  // A learned member is dialled again too (its connection may have been
  // cut with both sides alive), within the jitter, and is known meanwhile.
  EXPECT_FALSE(t.learn("peer:7001", now + 1s));
  EXPECT_EQ(t.take_due(now + 1s + member_table::limits{}.rejoin_jitter),
            std::vector<std::string>{"peer:7001"});
}

TEST(MemberTable, ALearnedMemberThatLeftIsDialledForItsAttemptsThenForgotten) {
  member_table::limits lim;
  lim.learned_attempts = 1;
  lim.rejoin_attempts = 3;
  lim.rejoin_jitter = 100ms;
  member_table t{{}, lim};
  auto now = clock_type::now();
  t.joined(4, "gone:7000"); // its hello made it known
  t.left(4, now);
  ASSERT_TRUE(t.next_due());
  EXPECT_LE(*t.next_due(), now + lim.rejoin_jitter); // soon, at a random point
  ASSERT_EQ(t.take_due(now + lim.rejoin_jitter), std::vector<std::string>{"gone:7000"});
  EXPECT_TRUE(t.take_due(now + 1h).empty()); // not twice while in flight
  // rejoin_attempts, not learned_attempts, then forgotten.
  for (int attempt = 1; attempt < 3; ++attempt) {
    t.dial_failed("gone:7000", now);
    ASSERT_TRUE(t.next_due()) << attempt;
    EXPECT_GE(*t.next_due(), now + lim.first_retry); // backing off
    ASSERT_EQ(t.take_due(*t.next_due()), std::vector<std::string>{"gone:7000"});
  }
  t.dial_failed("gone:7000", now);
  EXPECT_FALSE(t.next_due()); // forgotten after its attempts
  EXPECT_TRUE(t.learn("gone:7000", now));
  // Learned afresh, it has learned_attempts again; one that answers is its
  // member, and is not dialled while it is.
  t.take_due(now);
  t.dialled("gone:7000", 5, false);
  EXPECT_EQ(t.members(), 1u);
  EXPECT_TRUE(t.take_due(now + 1h).empty());
}

TEST(MemberTable, AnIncomingHelloMakesItsEndpointKnown) {
  member_table t{{}};
  auto now = clock_type::now();
  t.joined(3, "c:7000");
  EXPECT_FALSE(t.learn("c:7000", now)); // a push of it dials nothing
  EXPECT_TRUE(t.take_due(now).empty());
  t.joined(0, "zero:1"); // no worker id: ignored
  EXPECT_EQ(t.members(), 1u);
}

TEST(MemberTable, LearnedEndpointsAreBounded) {
  member_table::limits lim;
  lim.max_endpoints = 3;
  member_table t{{"j:1"}, lim};
  auto now = clock_type::now();
  EXPECT_TRUE(t.learn("a:1", now));
  EXPECT_TRUE(t.learn("b:1", now));
  EXPECT_FALSE(t.learn("c:1", now));
  EXPECT_EQ(t.take_due(now).size(), 3u);
}
