// lost_peers: which peers a hello names as lost, and how it is read.
#include <gtest/gtest.h>

#include "actors/cluster/lost_peers.hpp"

using namespace ferry;

TEST(LostPeers, AHelloNamesEachPeerLostUntilItIsBackAndTheOldestGoFirst) {
  lost_peers lost;
  EXPECT_FALSE(lost.capability());
  lost.lost(0x1234);
  lost.lost(0xabcdef0123456789);
  auto cap = lost.capability();
  ASSERT_TRUE(cap);
  EXPECT_EQ(*cap, "lost:0000000000001234,abcdef0123456789");
  EXPECT_TRUE(says_it_lost({"chunked", *cap}, 0x1234));
  EXPECT_TRUE(says_it_lost({*cap}, 0xabcdef0123456789));
  EXPECT_FALSE(says_it_lost({*cap}, 0x5678));

  lost.back(0x1234);
  EXPECT_FALSE(lost.is_lost(0x1234));
  EXPECT_FALSE(says_it_lost({*lost.capability()}, 0x1234));

  for (uint64_t id = 1; id <= 20; ++id)
    lost.lost(id);
  EXPECT_FALSE(lost.is_lost(0xabcdef0123456789)); // the oldest went
  EXPECT_FALSE(lost.is_lost(6));
  EXPECT_TRUE(lost.is_lost(7));
  EXPECT_TRUE(lost.is_lost(20));
  EXPECT_LE(lost.capability()->size(), 255u); // a hello's capability bound
}

TEST(LostPeers, AMalformedCapabilityNamesNobodyAndIsNotShown) {
  const uint64_t me = 0x1234;
  for (const char* bad : {"lost:", "lost:1234", "lost:00000000000012345", "lost:000000000000123g",
                          "lost:0000000000001234x", "lost:,0000000000001234", "lostx"})
    EXPECT_FALSE(says_it_lost({bad}, me)) << bad;
  EXPECT_TRUE(says_it_lost({lost_capability(me)}, me));
  EXPECT_TRUE(says_it_lost({"lost:000000000000ABCD,0000000000001234"}, me));
  auto shown = without_lost({"chunked", lost_capability(me), "ucx"});
  EXPECT_EQ(shown, (std::vector<std::string>{"chunked", "ucx"}));
}
