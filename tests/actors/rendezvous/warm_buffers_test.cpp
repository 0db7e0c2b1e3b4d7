// warm_buffers: what a fetched payload's or get result's room comes from.
// Large buffers a handler or a caller gave back are handed out again (the
// smallest that fits, never to a small result or one far smaller), small
// ones are not kept, the byte bound holds (the oldest go first), and once
// closed nothing is kept. A buffer prepared ahead for the next result is
// kept only where none fits, one at a time, faulted in, and never evicts a
// given one; the prefiller keeps one for the latest size asked. A buffer
// nobody took for the idle time is let go, by the reaper on its own.
#include "actors/rendezvous/warm_buffers.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <vector>

#include <caf/all.hpp>

#include "actors/node_context.hpp"
#include "actors/rendezvous/result_prefiller.hpp"
#include "actors/rendezvous/warm_buffer_reaper.hpp"
#include "tests/cluster/test_support.hpp"

namespace {

using ferry::byte_buffer;
using ferry::warm_buffers;

constexpr size_t MiB = 1ull << 20;

byte_buffer with_capacity(size_t bytes) {
  byte_buffer b;
  b.reserve(bytes);
  b.resize(bytes / 2, 'x');
  return b;
}

TEST(MessengerWarmBuffers, AGivenBufferIsTakenAgainEmptyWithItsRoom) {
  warm_buffers warm{256 * MiB};
  auto b = with_capacity(64 * MiB);
  const char* memory = b.data();
  warm.give(std::move(b));
  EXPECT_EQ(warm.kept_buffers(), 1u);
  EXPECT_EQ(warm.kept_bytes(), 64 * MiB);
  auto again = warm.take(64 * MiB);
  EXPECT_EQ(again.data(), memory); // the same pages, already faulted in
  EXPECT_TRUE(again.empty());
  EXPECT_GE(again.capacity(), 64 * MiB);
  EXPECT_EQ(warm.kept_buffers(), 0u);
  EXPECT_EQ(warm.kept_bytes(), 0u);
}

TEST(MessengerWarmBuffers, TakeUnfilledReusesAKeptBufferWithoutFillingIt) {
  // A GET's destination: the bytes are overwritten, so a kept buffer is
  // only cut to size (what it held stays, proof that nothing zero-filled
  // it); nothing is ever filled here.
  warm_buffers warm{256 * MiB};
  byte_buffer b(16 * MiB, 'p');
  const char* memory = b.data();
  warm.give(std::move(b));
  auto again = warm.take_unfilled(12 * MiB);
  EXPECT_EQ(again.data(), memory);
  ASSERT_EQ(again.size(), 12 * MiB); // cut, its bytes as they were
  EXPECT_EQ(again.front(), 'p');
  EXPECT_EQ(again.back(), 'p');
  EXPECT_EQ(warm.kept_buffers(), 0u);
  // Nothing kept fits: an empty fresh one (the caller grows it).
  auto fresh = warm.take_unfilled(5 * MiB);
  EXPECT_TRUE(fresh.empty());
  // A kept buffer shorter than asked stays as long as it is.
  byte_buffer shorter(1 * MiB, 'q');
  shorter.reserve(8 * MiB);
  warm.give(std::move(shorter));
  auto grown = warm.take_unfilled(6 * MiB);
  EXPECT_GE(grown.capacity(), 6 * MiB);
  EXPECT_EQ(grown.size(), 1 * MiB);
  // take() still hands out an empty buffer, whatever it held.
  warm.give(std::move(again));
  EXPECT_TRUE(warm.take(8 * MiB).empty());
}

TEST(MessengerWarmBuffers, TakeGivesTheSmallestThatFitsOrAFreshOne) {
  warm_buffers warm{256 * MiB};
  warm.give(with_capacity(32 * MiB));
  warm.give(with_capacity(8 * MiB));
  warm.give(with_capacity(16 * MiB));
  EXPECT_GE(warm.take(10 * MiB).capacity(), 16 * MiB);
  EXPECT_LT(warm.take(10 * MiB).capacity(), 64 * MiB); // the 32 MiB one
  EXPECT_EQ(warm.take(10 * MiB).capacity(), 0u);       // only 8 MiB left: fresh
  EXPECT_EQ(warm.kept_buffers(), 1u);
}

TEST(MessengerWarmBuffers, SmallOrOversizedBuffersAreNotKept) {
  warm_buffers warm{16 * MiB};
  warm.give(with_capacity(warm_buffers::min_kept - 1));
  warm.give(with_capacity(32 * MiB));
  EXPECT_EQ(warm.kept_buffers(), 0u);
  warm_buffers none{0};
  none.give(with_capacity(8 * MiB));
  EXPECT_EQ(none.kept_bytes(), 0u);
}

TEST(MessengerWarmBuffers, TheBoundHoldsAndTheOldestGoFirst) {
  warm_buffers warm{40 * MiB};
  warm.give(with_capacity(16 * MiB));
  warm.give(with_capacity(20 * MiB));
  warm.give(with_capacity(12 * MiB)); // the 16 MiB one makes room
  EXPECT_LE(warm.kept_bytes(), 40 * MiB);
  EXPECT_EQ(warm.kept_buffers(), 2u);
  EXPECT_EQ(warm.take(14 * MiB).capacity() >= 20 * MiB, true);
  EXPECT_EQ(warm.take(14 * MiB).capacity(), 0u);
}

} // namespace

TEST(MessengerWarmBuffers, ASmallResultOrOneFarSmallerThanAKeptBufferTakesNone) {
  warm_buffers warm{256 * MiB};
  warm.give(with_capacity(64 * MiB));
  // Its caller would hold all 64 MiB of it.
  EXPECT_EQ(warm.take(4 * 1024).capacity(), 0u);
  EXPECT_EQ(warm.take_unfilled(warm_buffers::min_kept - 1).capacity(), 0u);
  EXPECT_EQ(warm.take(16 * MiB - 1).capacity(), 0u); // over four times smaller
  EXPECT_EQ(warm.kept_buffers(), 1u);
  EXPECT_GE(warm.take(16 * MiB).capacity(), 64 * MiB); // a quarter: served
  EXPECT_EQ(warm.kept_buffers(), 0u);
}

TEST(MessengerWarmBuffers, ClosedTheyFreeWhatTheyKeptAndKeepNothingMore) {
  warm_buffers warm{256 * MiB};
  warm.give(with_capacity(8 * MiB));
  warm.give(with_capacity(16 * MiB));
  warm.close();
  EXPECT_EQ(warm.kept_buffers(), 0u);
  EXPECT_EQ(warm.kept_bytes(), 0u);
  auto late = with_capacity(8 * MiB);
  warm.give(std::move(late));
  EXPECT_TRUE(late.empty()); // taken, and freed
  EXPECT_EQ(warm.kept_buffers(), 0u);
  EXPECT_EQ(warm.take(8 * MiB).capacity(), 0u);
}

TEST(MessengerWarmBuffers, ANodeContextKeepsAGivenBackResultOrFreesItWithoutWarmBuffers) {
  ferry::node_context with_warm;
  with_warm.warm = std::make_shared<warm_buffers>(256 * MiB);
  auto result = with_capacity(8 * MiB);
  with_warm.give_back(std::move(result));
  EXPECT_TRUE(result.empty());
  EXPECT_EQ(with_warm.warm->kept_buffers(), 1u);
  ferry::node_context without; // --warm-buffer-bytes 0
  auto dropped = with_capacity(8 * MiB);
  without.give_back(std::move(dropped));
  EXPECT_TRUE(dropped.empty());
  EXPECT_EQ(dropped.capacity(), 0u); // freed, not kept anywhere
}

TEST(MessengerWarmBuffers, OnePreparedBufferIsKeptWhereNoneFitsAndItNeverEvictsAGivenOne) {
  warm_buffers warm{64 * MiB};
  EXPECT_FALSE(warm.wants_prepared(warm_buffers::min_kept - 1)); // too small to keep
  warm.give(with_capacity(16 * MiB));           // given back by a caller
  EXPECT_FALSE(warm.wants_prepared(16 * MiB)); // the kept one fits
  EXPECT_FALSE(warm.wants_prepared(12 * MiB)); // and serves this one too
  EXPECT_TRUE(warm.wants_prepared(40 * MiB));  // 16 + 40 within the 64 MiB bound
  EXPECT_FALSE(warm.wants_prepared(50 * MiB)); // only by evicting the given one
  EXPECT_FALSE(warm.keep_prepared(byte_buffer(50 * MiB)));
  EXPECT_EQ(warm.kept_buffers(), 1u); // not evicted for it
  EXPECT_EQ(warm.kept_bytes(), 16 * MiB);
  EXPECT_TRUE(warm.keep_prepared(byte_buffer(40 * MiB)));
  EXPECT_EQ(warm.kept_bytes(), 56 * MiB);
  EXPECT_FALSE(warm.keep_prepared(byte_buffer(40 * MiB))); // one that fits is kept already
  // A second prepared buffer replaces the first (no result took it):
  // 16 + 44 fits the bound, 16 + 40 + 44 would not.
  EXPECT_TRUE(warm.wants_prepared(44 * MiB));
  EXPECT_TRUE(warm.keep_prepared(byte_buffer(44 * MiB)));
  EXPECT_EQ(warm.kept_buffers(), 2u);
  EXPECT_EQ(warm.kept_bytes(), 60 * MiB);
  EXPECT_EQ(warm.take(44 * MiB).capacity(), 44 * MiB); // a result takes it
  EXPECT_EQ(warm.kept_bytes(), 16 * MiB);
  warm.close();
  EXPECT_FALSE(warm.wants_prepared(16 * MiB));
  EXPECT_FALSE(warm.keep_prepared(byte_buffer(16 * MiB)));
  EXPECT_EQ(warm.kept_buffers(), 0u);
}

/// The share of [data, data + len) in resident pages.
static double resident_share(const char* data, size_t len) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto first = reinterpret_cast<uintptr_t>(data) / page * page;
  auto last = (reinterpret_cast<uintptr_t>(data) + len + page - 1) / page * page;
  std::vector<unsigned char> in((last - first) / page);
  if (::mincore(reinterpret_cast<void*>(first), last - first, in.data()) != 0)
    return -1;
  size_t n = 0;
  for (auto c : in)
    n += c & 1;
  return static_cast<double>(n) / static_cast<double>(in.size());
}

TEST(MessengerWarmBuffers, APreparedBufferIsFaultedInAndRoundedUpForALargerResult) {
  warm_buffers warm{256 * MiB};
  EXPECT_FALSE(ferry::prepare_result_buffer(warm, 1 * MiB)); // below min_kept: none
  ASSERT_TRUE(ferry::prepare_result_buffer(warm, 40 * MiB + 5));
  EXPECT_FALSE(ferry::prepare_result_buffer(warm, 40 * MiB)); // the kept one serves it
  EXPECT_EQ(warm.kept_buffers(), 1u);
  EXPECT_EQ(warm.kept_bytes(), 42 * MiB); // rounded up to 2 MiB
  // A result a little larger takes it: its prepared bytes are resident,
  // it grows on from them.
  auto room = warm.take_unfilled(41 * MiB);
  ASSERT_EQ(room.size(), 40 * MiB + 5);
  EXPECT_EQ(room.capacity(), 42 * MiB);
  EXPECT_EQ(resident_share(room.data(), room.size()), 1.0);
  EXPECT_EQ(warm.kept_buffers(), 0u);
  // (The check can fail: fresh room of that size, never touched, is not.)
  byte_buffer fresh;
  fresh.reserve(40 * MiB);
  EXPECT_LT(resident_share(fresh.data(), 40 * MiB), 0.5);
}

TEST(MessengerWarmBuffers, ThePrefillerKeepsOneBufferForTheLatestSizeAskedThatNoneFits) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto warm = std::make_shared<warm_buffers>(256 * MiB);
  auto prefiller = ferry::spawn_result_prefiller(sys, warm);
  // 8 MiB prepared; the second ask finds it kept; 20 MiB does not fit in
  // it and takes its place.
  caf::anon_send(prefiller, ferry::prefill_atom::value, uint64_t{8 * MiB});
  caf::anon_send(prefiller, ferry::prefill_atom::value, uint64_t{8 * MiB});
  caf::anon_send(prefiller, ferry::prefill_atom::value, uint64_t{20 * MiB});
  ASSERT_TRUE(ferry::test::eventually([&] { return warm->kept_bytes() == 20 * MiB; }))
    << warm->kept_bytes();
  EXPECT_EQ(warm->kept_buffers(), 1u);
  EXPECT_EQ(warm->take_unfilled(20 * MiB).size(), 20 * MiB);
  caf::anon_send_exit(prefiller, caf::exit_reason::user_shutdown);
}

namespace {

/// The clock's reading once it has moved past `t` (it moves in nanoseconds:
/// a few reads at most).
std::chrono::steady_clock::time_point after(std::chrono::steady_clock::time_point t) {
  auto now = std::chrono::steady_clock::now();
  while (now <= t)
    now = std::chrono::steady_clock::now();
  return now;
}

} // namespace

TEST(MessengerWarmBuffers, ABufferIdleForTheWholeTimeIsLetGoAndAFresherOneStays) {
  using namespace std::chrono_literals;
  warm_buffers warm{256 * MiB};
  auto first = std::chrono::steady_clock::now(); // nothing was kept before
  warm.give(with_capacity(16 * MiB));
  ASSERT_TRUE(ferry::prepare_result_buffer(warm, 40 * MiB)); // prepared: 40 MiB
  auto older = std::chrono::steady_clock::now(); // both were kept by now
  after(older);
  auto fresher = with_capacity(8 * MiB);
  const char* fresher_memory = fresher.data();
  warm.give(std::move(fresher)); // kept after `older`
  ASSERT_EQ(warm.kept_bytes(), 64 * MiB);
  EXPECT_EQ(warm.drop_idle(older + 1s, 0ms), 0u) << "0: never";
  EXPECT_EQ(warm.drop_idle(first + 999ms, 1s), 0u) << "none idle for the whole second yet";
  EXPECT_EQ(warm.drop_idle(older + 1s, 1s), 56 * MiB);
  EXPECT_EQ(warm.kept_buffers(), 1u);
  EXPECT_EQ(warm.kept_bytes(), 8 * MiB);
  EXPECT_EQ(warm.take_unfilled(8 * MiB).data(), fresher_memory);
  // The prepared buffer went with them: another one may be prepared.
  EXPECT_TRUE(warm.wants_prepared(40 * MiB));
}

TEST(MessengerWarmBuffers, TheReaperLetsGoWhatNobodyTookAndKeepsLooking) {
  using namespace std::chrono_literals;
  EXPECT_EQ(ferry::warm_buffer_reap_period(60s), 30s);
  EXPECT_EQ(ferry::warm_buffer_reap_period(10ms), 1s); // at least a second
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto warm = std::make_shared<warm_buffers>(256 * MiB);
  auto reaper = ferry::spawn_warm_buffer_reaper(sys, warm, 10ms);
  for (int round = 0; round < 2; ++round) { // its second look too
    warm->give(with_capacity(32 * MiB));
    ASSERT_EQ(warm->kept_bytes(), 32 * MiB);
    EXPECT_TRUE(ferry::test::eventually([&] { return warm->kept_bytes() == 0; }, 10s))
      << "round " << round;
  }
  caf::anon_send_exit(reaper, caf::exit_reason::user_shutdown);
}
