// The consumer's unpacked-rkey cache as a plain LRU: hits against unpacks,
// the generation in the key (identical packed bytes of a remapped arena are
// a different entry), invalidation by peer, the entry and byte bounds, and
// entries the caller finds unusable.
#include <gtest/gtest.h>

#include <memory>

#include "rdma/rkey_cache.hpp"

using namespace ferry;

namespace {

rkey_cache_key key(uint64_t peer, uint64_t generation, std::vector<uint8_t> bytes = {1, 2, 3}) {
  return rkey_cache_key{peer, generation, std::move(bytes)};
}

} // namespace

TEST(RkeyCache, SecondLookupOfTheSameRegistrationIsAHit) {
  rkey_cache<int> c;
  EXPECT_EQ(c.find(key(7, 1), 100), nullptr);
  c.insert(key(7, 1), 42, 100);
  auto* v = c.find(key(7, 1), 100);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 42);
  auto s = c.stats();
  EXPECT_EQ(s.unpacks, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, 100u);
}

TEST(RkeyCache, SameBytesOfANewGenerationAreAMiss) {
  // An owner that unmaps an arena and maps a new one at the same address
  // packs identical posix key bytes; only the generation tells them apart.
  rkey_cache<int> c;
  c.insert(key(7, 1), 1, 64);
  EXPECT_EQ(c.find(key(7, 2), 64), nullptr);
  EXPECT_EQ(c.find(key(8, 1), 64), nullptr);                 // another peer
  EXPECT_EQ(c.find(key(7, 1, {1, 2, 4}), 64), nullptr);      // other bytes
  EXPECT_NE(c.find(key(7, 1), 64), nullptr);
  EXPECT_EQ(c.stats().hits, 1u);
}

TEST(RkeyCache, InvalidatingAPeerDropsOnlyItsEntries) {
  rkey_cache<int> c;
  c.insert(key(7, 1), 1, 10);
  c.insert(key(7, 2), 2, 10);
  c.insert(key(9, 1), 3, 10);
  EXPECT_EQ(c.invalidate_peer(7), 2u);
  EXPECT_EQ(c.find(key(7, 1), 10), nullptr);
  EXPECT_EQ(c.find(key(7, 2), 10), nullptr);
  EXPECT_NE(c.find(key(9, 1), 10), nullptr);
  auto s = c.stats();
  EXPECT_EQ(s.invalidations, 2u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, 10u);
}

TEST(RkeyCache, EvictsTheLeastRecentlyUsedPastTheEntryBound) {
  rkey_cache<int> c{rkey_cache_config{3, 1ull << 40}};
  c.insert(key(1, 1), 1, 1);
  c.insert(key(1, 2), 2, 1);
  c.insert(key(1, 3), 3, 1);
  ASSERT_NE(c.find(key(1, 1), 1), nullptr); // 1 is now the most recent
  c.insert(key(1, 4), 4, 1);                // evicts 2
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.find(key(1, 2), 1), nullptr);
  EXPECT_NE(c.find(key(1, 1), 1), nullptr);
  EXPECT_NE(c.find(key(1, 3), 1), nullptr);
  EXPECT_NE(c.find(key(1, 4), 1), nullptr);
  EXPECT_EQ(c.stats().evictions, 1u);
}

TEST(RkeyCache, TheByteBoundEvictsButNeverTheEntryInUse) {
  rkey_cache<int> c{rkey_cache_config{16, 100}};
  c.insert(key(1, 1), 1, 60);
  c.insert(key(1, 2), 2, 60); // 120 > 100: evicts 1
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.find(key(1, 1), 60), nullptr);
  c.insert(key(1, 3), 3, 500); // alone over the bound: kept, 2 evicted
  EXPECT_EQ(c.size(), 1u);
  EXPECT_NE(c.find(key(1, 3), 500), nullptr);
  // A larger GET through an entry raises its estimate.
  rkey_cache<int> d{rkey_cache_config{16, 100}};
  d.insert(key(1, 1), 1, 10);
  d.insert(key(1, 2), 2, 10);
  ASSERT_NE(d.find(key(1, 2), 95), nullptr); // 105 > 100: 1 goes
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.stats().bytes, 95u);
}

TEST(RkeyCache, AnUnusableEntryIsDroppedAndNotCountedAsAHit) {
  rkey_cache<int> c;
  c.insert(key(1, 1), 5, 1);
  EXPECT_EQ(c.find(key(1, 1), 1, [](const int&) { return false; }), nullptr);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.stats().hits, 0u);
}

TEST(RkeyCache, EvictionDropsOnlyTheCachesReference) {
  // What the engine relies on: a GET in flight holds its own reference, so
  // an evicted key is destroyed only after that GET.
  rkey_cache<std::shared_ptr<int>> c{rkey_cache_config{1, 1ull << 40}};
  auto in_flight = std::make_shared<int>(1);
  std::weak_ptr<int> watch = in_flight;
  c.insert(key(1, 1), in_flight, 1);
  c.insert(key(1, 2), std::make_shared<int>(2), 1); // evicts key 1
  EXPECT_FALSE(watch.expired());
  in_flight.reset();
  EXPECT_TRUE(watch.expired());
}
