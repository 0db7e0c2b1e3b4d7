// The messenger's staging rules (protocol/staging_headers.hpp), table by
// table: the threshold, the budget's rounding, headers that belong to the
// send that staged, the fetch's two bounds, and the receiver's limit.
#include <gtest/gtest.h>

#include "protocol/staging_headers.hpp"
#include "protocol/rv_messages.hpp"

using namespace ferry;
using namespace ferry::messenger;
using namespace std::chrono_literals;

TEST(MessengerRules, OnlyPayloadsAboveTheThresholdAreStaged) {
  struct row { uint64_t bytes; bool staged; };
  const row rows[] = {{0, false}, {1, false}, {default_staging_threshold, false},
                      {default_staging_threshold + 1, true}, {64ull << 20, true}};
  for (auto& r : rows)
    EXPECT_EQ(stages(r.bytes), r.staged) << r.bytes;
  EXPECT_TRUE(stages(2, 1));
  EXPECT_FALSE(stages(1, 1));
}

TEST(MessengerRules, TheBudgetIsRoundedUpToWholeMilliseconds) {
  struct row { std::chrono::nanoseconds left; uint64_t ms; };
  const row rows[] = {{0ns, 0}, {-5ms, 0}, {1ns, 1}, {999999ns, 1}, {1ms, 1},
                      {1000001ns, 2}, {2500ms, 2500}};
  for (auto& r : rows)
    EXPECT_EQ(budget_ms(r.left), r.ms) << r.left.count();
}

TEST(MessengerRules, AStagedSendWritesItsOwnHeadersOverForwardedOnes) {
  data_handle mine{7, 42};
  headers h{{"trace", "abc"}, {handle_header, to_string(data_handle{9, 1})},
            {budget_header, "5"}};
  write_staged(h, mine, 1500ms + 1ns);
  EXPECT_EQ(h.at(handle_header), to_string(mine));
  EXPECT_EQ(h.at(budget_header), "1501");
  EXPECT_EQ(h.at("trace"), "abc");
  // No timeout of its own: a forwarded budget does not travel with it.
  headers g{{budget_header, "5"}};
  write_staged(g, mine, std::nullopt);
  EXPECT_EQ(g.count(budget_header), 0u);
  EXPECT_EQ(g.at(handle_header), to_string(mine));
}

TEST(MessengerRules, TheReceiverTakesBothHeadersOutBeforeTheHandler) {
  data_handle mine{7, 42};
  headers h{{"trace", "abc"}};
  write_staged(h, mine, 250ms);
  auto ref = take_staged(h);
  EXPECT_TRUE(ref.error.empty());
  ASSERT_TRUE(ref.handle);
  EXPECT_EQ(*ref.handle, mine);
  ASSERT_TRUE(ref.budget);
  EXPECT_EQ(*ref.budget, 250ms);
  EXPECT_EQ(h, (headers{{"trace", "abc"}})); // the handler sees only its own
  // A lone budget (an eager send) means nothing, and is still taken out.
  headers lone{{budget_header, "10"}};
  auto inline_ref = take_staged(lone);
  EXPECT_FALSE(inline_ref.handle);
  EXPECT_FALSE(inline_ref.budget);
  EXPECT_TRUE(lone.empty());
}

TEST(MessengerRules, APeersHeadersAreCheckedBeforeUse) {
  struct row { std::string budget; std::optional<std::chrono::milliseconds> want; };
  const std::chrono::milliseconds most{max_wire_duration_ms};
  const row rows[] = {{"10", 10ms}, {"0", 0ms}, {"18446744073709551615", most},
                      {"99999999999999999999999", most}, {"-1", std::nullopt},
                      {"12ms", std::nullopt}, {"", std::nullopt}, {" 5", std::nullopt}};
  for (auto& r : rows) {
    SCOPED_TRACE(r.budget);
    headers h{{handle_header, to_string(data_handle{7, 1})}, {budget_header, r.budget}};
    auto ref = take_staged(h);
    EXPECT_TRUE(ref.error.empty());
    EXPECT_EQ(ref.budget, r.want);
  }
  headers bad{{handle_header, "not a handle"}, {budget_header, "10"}};
  auto ref = take_staged(bad);
  EXPECT_FALSE(ref.error.empty());
  EXPECT_FALSE(ref.handle);
  EXPECT_TRUE(bad.empty()); // refused, and nothing of it reaches a handler
}

TEST(MessengerRules, TheFetchEndsAtTheFirstOfTwoBounds) {
  struct row {
    message_kind kind;
    std::optional<std::chrono::milliseconds> budget;
    std::optional<fetch_limit> want;
    expiry_action action;
  };
  const auto unary = message_kind::unary;
  const auto tell = message_kind::fire_and_forget;
  const auto item = message_kind::stream_item;
  const auto caller = fetch_bound::caller_budget;
  const auto receiver = fetch_bound::receiver_timeout;
  const auto quiet = expiry_action::drop_silently;
  const auto reply = expiry_action::reply_fetch_timed_out;
  const row rows[] = {
    {unary, 200ms, fetch_limit{200ms, caller}, quiet},    // the caller's own timer answers
    {unary, 1000ms, fetch_limit{1000ms, caller}, quiet},  // equal: the caller's
    {unary, 5000ms, fetch_limit{1000ms, receiver}, reply}, // the receiver's bound: a reply
    {unary, std::nullopt, fetch_limit{1000ms, receiver}, reply},
    {tell, std::nullopt, fetch_limit{1000ms, receiver}, quiet}, // nobody to tell
    {item, std::nullopt, std::nullopt, quiet},            // exempt from the receiver's
    {item, 300ms, fetch_limit{300ms, caller}, quiet},
  };
  for (auto& r : rows) {
    auto got = limit_for(r.kind, r.budget, 1000ms);
    ASSERT_EQ(got.has_value(), r.want.has_value());
    if (!got)
      continue;
    EXPECT_EQ(got->after, r.want->after);
    EXPECT_EQ(got->by, r.want->by);
    EXPECT_EQ(on_expiry(got->by, r.kind), r.action);
  }
}

TEST(MessengerRules, TheReceiversLimitNamesBothSizes) {
  EXPECT_EQ(over_limit(100, 0), "");   // no limit
  EXPECT_EQ(over_limit(100, 100), ""); // at the limit
  auto why = over_limit(101, 100);
  EXPECT_NE(why.find("101"), std::string::npos) << why;
  EXPECT_NE(why.find("100"), std::string::npos) << why;
}
