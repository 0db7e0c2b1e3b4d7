// The back-pressure rules of a messenger stream, both ends, as plain state.
#include <gtest/gtest.h>

#include "actors/messenger/stream_window.hpp"

using namespace ferry::messenger;

namespace {

envelope item(int n) {
  return envelope{"", {{"seq", std::to_string(n)}}, {}};
}

} // namespace

TEST(MessengerStreamWindow, TheProducerMakesOneItemAtATimeAndOnlyWithCredit) {
  stream_credit c{3};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.may_produce());
    c.asking();
    EXPECT_FALSE(c.may_produce()) << "two items asked at once";
    c.produced();
  }
  EXPECT_FALSE(c.may_produce());
  c.granted(2);
  EXPECT_EQ(c.credit(), 2u);
  c.granted(100); // never above the window
  EXPECT_EQ(c.credit(), 3u);
  c.end();
  EXPECT_FALSE(c.may_produce());
}

TEST(MessengerStreamWindow, TheConsumerGrantsBackEveryHalfWindowTaken) {
  stream_inbox in{4};
  std::vector<uint64_t> slots;
  for (int i = 0; i < 4; ++i) {
    auto s = in.arrived();
    ASSERT_TRUE(s);
    in.ready(*s, item(i));
  }
  EXPECT_FALSE(in.arrived()) << "a fifth item past the credit was taken";
  auto a = in.take();
  EXPECT_EQ(a.what, stream_inbox::state::item);
  EXPECT_EQ(a.grant, 0u);
  auto b = in.take();
  EXPECT_EQ(b.grant, 2u); // half of 4
  EXPECT_EQ(b.item.hdrs["seq"], "1");
}

TEST(MessengerStreamWindow, ItemsReachTheCallerInTheOrderTheyWereSent) {
  stream_inbox in{4};
  auto first = *in.arrived();  // staged: fetched later
  auto second = *in.arrived(); // inline: ready at once
  in.ready(second, item(1));
  EXPECT_EQ(in.take().what, stream_inbox::state::waiting);
  in.ready(first, item(0));
  EXPECT_EQ(in.take().item.hdrs["seq"], "0");
  EXPECT_EQ(in.take().item.hdrs["seq"], "1");
}

TEST(MessengerStreamWindow, AnEndComesAfterTheItemsAndAFailureBeforeThem) {
  stream_inbox clean{2};
  clean.ready(*clean.arrived(), item(0));
  clean.end();
  EXPECT_EQ(clean.take().what, stream_inbox::state::item);
  EXPECT_EQ(clean.take().what, stream_inbox::state::finished);

  stream_inbox ended_badly{2};
  ended_badly.ready(*ended_badly.arrived(), item(0));
  ended_badly.end("the source failed");
  EXPECT_EQ(ended_badly.take().what, stream_inbox::state::item);
  auto r = ended_badly.take();
  EXPECT_EQ(r.what, stream_inbox::state::failed);
  EXPECT_EQ(r.error, "the source failed");

  stream_inbox refused{2};
  refused.ready(*refused.arrived(), item(0));
  refused.fail("over the limit");
  EXPECT_EQ(refused.take().what, stream_inbox::state::failed);
}
