// Store: the slot store's rules (refcounts, leases, free at zero, deadlines).
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "actors/rendezvous/slot_store.hpp"
#include "protocol/errors.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t worker = 42;

byte_buffer bytes_of(size_t n) {
  byte_buffer b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = static_cast<char>(i * 7 + 3);
  return b;
}

/// A pinned block over `backing` (a stand-in for arena memory); `on_free`
/// runs when the last holder lets go of it.
pinned_ptr block_over(byte_buffer& backing, std::function<void()> on_free = nullptr) {
  return std::make_shared<pinned_block>(backing.data(), backing.size(), 0x1000,
                                        std::make_shared<std::vector<uint8_t>>(), 1,
                                        std::move(on_free));
}

/// Pulls every chunk of an acquired transfer in order: the bytes (empty,
/// with a failure recorded, when a pull fails).
byte_buffer pull_chunks(slot_store& store, const rv_ready& ready,
                        slot_store::time_point now) {
  byte_buffer out;
  for (uint64_t i = 0; i < ready.chunk_count; ++i) {
    auto c = store.pull(ready.transfer_id, i, now);
    if (!c) {
      ADD_FAILURE() << "pull " << i << ": " << describe(c.error());
      return {};
    }
    out.insert(out.end(), c->data(), c->data() + c->size());
  }
  return out;
}

struct SlotStore : ::testing::Test {
  slot_store store{worker, 4}; // tiny chunks to exercise boundaries
  slot_store::time_point t0 = slot_store::clock_type::now();
};

} // namespace

TEST_F(SlotStore, RegisterGivesRefcountOne) {
  auto h = store.register_data(bytes_of(10), t0);
  EXPECT_EQ(h.owner(), worker);
  auto md = store.metadata(h);
  ASSERT_TRUE(md);
  EXPECT_EQ(md->total_len, 10u);
  EXPECT_EQ(md->refcount, 1u);
  EXPECT_EQ(store.current_stats().staged_bytes, 10u);
}

TEST_F(SlotStore, ChunksCoverThePayloadExactly) {
  auto payload = bytes_of(10);
  auto h = store.register_data(payload, t0);
  auto ready = store.acquire(h, t0);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->chunk_count, 3u);
  EXPECT_EQ(pull_chunks(store, *ready, t0), payload);
  auto open = store.acquire(h, t0);
  auto past = store.pull(open->transfer_id, 3, t0);
  ASSERT_FALSE(past);
  EXPECT_TRUE(is(past.error(), errc::chunk_out_of_range));
}

TEST_F(SlotStore, EmptyPayloadHasNoChunks) {
  auto h = store.register_data({}, t0);
  auto ready = store.acquire(h, t0);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->chunk_count, 0u);
  EXPECT_EQ(ready->total_len, 0u);
  EXPECT_FALSE(store.pull(ready->transfer_id, 0, t0));
}

TEST_F(SlotStore, ReleaseFreesAtZero) {
  auto h = store.register_data(bytes_of(8), t0);
  auto lease = store.acquire(h, t0)->lease_id;
  auto r = store.release(h, lease);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->refcount, 0u);
  EXPECT_TRUE(r->freed);
  EXPECT_EQ(store.current_stats().slots, 0u);
  EXPECT_EQ(store.current_stats().staged_bytes, 0u);
  EXPECT_TRUE(is(store.metadata(h).error(), errc::unknown_handle));
}

TEST_F(SlotStore, ReleaseTwiceIsAnError) {
  auto h = store.register_data(bytes_of(8), t0);
  ASSERT_TRUE(store.ref(h));
  auto lease = store.acquire(h, t0)->lease_id;
  ASSERT_TRUE(store.release(h, lease));
  auto again = store.release(h, lease);
  ASSERT_FALSE(again);
  EXPECT_TRUE(is(again.error(), errc::unknown_lease));
  EXPECT_EQ(store.metadata(h)->refcount, 1u); // the bad call changed nothing
}

TEST_F(SlotStore, UnrefDropsAReferenceNoLeaseHoldsAndNeverOneALeaseWillRelease) {
  // Nobody fetched it: the stager's reference goes, and the slot with it.
  auto unread = store.register_data(bytes_of(8), t0);
  auto freed = store.unref(unread);
  ASSERT_TRUE(freed);
  EXPECT_TRUE(*freed);
  EXPECT_TRUE(is(store.metadata(unread).error(), errc::unknown_handle));
  EXPECT_FALSE(store.unref(unread)); // gone
  // A reader holds a lease: its release will drop the only reference.
  auto read = store.register_data(bytes_of(8), t0);
  auto lease = store.acquire(read, t0)->lease_id;
  EXPECT_TRUE(is(store.unref(read).error(), errc::invalid_argument));
  EXPECT_EQ(store.metadata(read)->refcount, 1u);
  auto r = store.release(read, lease);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->freed);
}

TEST_F(SlotStore, RefAllowsTwoConsumers) {
  auto h = store.register_data(bytes_of(8), t0);
  EXPECT_EQ(*store.ref(h), 2u);
  auto a = store.acquire(h, t0)->lease_id;
  auto b = store.acquire(h, t0)->lease_id;
  EXPECT_NE(a, b);
  auto ra = store.release(h, a);
  ASSERT_TRUE(ra);
  EXPECT_FALSE(ra->freed);
  auto rb = store.release(h, b);
  ASSERT_TRUE(rb);
  EXPECT_TRUE(rb->freed);
}

TEST_F(SlotStore, DetachKeepsTheHandleUsable) {
  auto h = store.register_data(bytes_of(8), t0);
  auto lease = store.acquire(h, t0)->lease_id;
  EXPECT_FALSE(store.detach(h, lease));
  EXPECT_EQ(store.current_stats().leases, 0u);
  auto again = store.acquire(h, t0);
  ASSERT_TRUE(again);
  EXPECT_TRUE(store.pull(again->transfer_id, 0, t0));
  // The old transfer is gone with its lease.
  EXPECT_TRUE(is(store.detach(h, lease), errc::unknown_lease));
}

TEST_F(SlotStore, UnknownHandlesAndOtherOwners) {
  EXPECT_TRUE(is(store.metadata({worker, 99}).error(), errc::unknown_handle));
  EXPECT_TRUE(is(store.acquire({worker + 1, 1}, t0).error(), errc::unknown_handle));
  EXPECT_TRUE(is(store.ref({worker, 99}).error(), errc::unknown_handle));
  EXPECT_TRUE(is(store.detach({worker, 99}, 1), errc::unknown_handle));
  EXPECT_TRUE(is(store.pull(12345, 0, t0).error(), errc::unknown_transfer));
}

TEST_F(SlotStore, SlotOutlivesRefcountZeroWhileALeaseReads) {
  auto h = store.register_data(bytes_of(8), t0);
  auto reader = store.acquire(h, t0);
  ASSERT_TRUE(store.ref(h));
  auto other = store.acquire(h, t0)->lease_id;
  ASSERT_TRUE(store.release(h, other));
  // Someone releases the last reference without holding the reader's lease:
  auto third = store.acquire(h, t0)->lease_id;
  auto r = store.release(h, third);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->refcount, 0u);
  EXPECT_FALSE(r->freed);
  EXPECT_TRUE(store.pull(reader->transfer_id, 1, t0)); // still readable
  EXPECT_FALSE(store.detach(h, reader->lease_id));
  EXPECT_EQ(store.current_stats().slots, 0u); // freed with the last lease
}

TEST_F(SlotStore, LeaseDeadlineEndsASilentLease) {
  auto h = store.register_data(bytes_of(8), t0);
  EXPECT_FALSE(store.has_deadlines());
  auto ready = store.acquire(h, t0, 100ms);
  ASSERT_TRUE(ready);
  EXPECT_TRUE(store.has_deadlines());
  EXPECT_EQ(store.sweep(t0 + 99ms).leases_expired, 0u);
  // A pull renews the deadline.
  ASSERT_TRUE(store.pull(ready->transfer_id, 0, t0 + 90ms));
  EXPECT_EQ(store.sweep(t0 + 150ms).leases_expired, 0u);
  // So does a renewal.
  EXPECT_FALSE(store.renew(h, ready->lease_id, t0 + 180ms));
  EXPECT_EQ(store.sweep(t0 + 270ms).leases_expired, 0u);
  EXPECT_EQ(store.sweep(t0 + 281ms).leases_expired, 1u);
  EXPECT_FALSE(store.has_deadlines());
  EXPECT_EQ(store.current_stats().leases, 0u);
  EXPECT_EQ(store.current_stats().slots, 1u); // the reference remains
}

TEST_F(SlotStore, LeaseWithoutDeadlineNeverExpires) {
  auto h = store.register_data(bytes_of(8), t0);
  ASSERT_TRUE(store.acquire(h, t0));
  EXPECT_FALSE(store.has_deadlines());
  EXPECT_EQ(store.sweep(t0 + 24h).leases_expired, 0u);
  EXPECT_EQ(store.current_stats().leases, 1u);
}

TEST_F(SlotStore, TimeToLiveFreesTheSlotWithItsLeases) {
  auto h = store.register_data(bytes_of(8), t0, 50ms);
  ASSERT_TRUE(store.acquire(h, t0));
  EXPECT_TRUE(store.has_deadlines());
  EXPECT_EQ(store.sweep(t0 + 49ms).slots_expired, 0u);
  auto r = store.sweep(t0 + 50ms);
  EXPECT_EQ(r.slots_expired, 1u);
  EXPECT_EQ(store.current_stats().slots, 0u);
  EXPECT_EQ(store.current_stats().leases, 0u);
  EXPECT_FALSE(store.has_deadlines());
}

TEST_F(SlotStore, PinnedSlotsServeChunksToo) {
  auto payload = bytes_of(10);
  bool released = false;
  byte_buffer backing(4096);
  std::copy(payload.begin(), payload.end(), backing.begin());
  auto block = block_over(backing, [&] { released = true; });
  auto h = store.register_pinned(block, payload.size(), t0);
  block.reset();
  auto md = store.metadata(h);
  ASSERT_TRUE(md);
  EXPECT_TRUE(md->pinned);
  EXPECT_EQ(md->total_len, 10u);
  auto ready = store.acquire(h, t0);
  ASSERT_TRUE(ready);
  EXPECT_EQ(pull_chunks(store, *ready, t0), payload);
  auto again = store.acquire(h, t0);
  ASSERT_TRUE(again);
  auto in_flight = store.pull(again->transfer_id, 0, t0); // e.g. queued in CAF
  ASSERT_FALSE(store.detach(h, again->lease_id));
  ASSERT_TRUE(in_flight);
  EXPECT_FALSE(released);
  ASSERT_TRUE(store.release(h, ready->lease_id));
  EXPECT_TRUE(released); // freeing the slot returns the block: chunks are copies
  EXPECT_EQ(byte_buffer(in_flight->data(), in_flight->data() + in_flight->size()),
            byte_buffer(payload.begin(), payload.begin() + 4));
}

TEST_F(SlotStore, PlainChunksShareThePayloadAndKeepItAlive) {
  auto payload = bytes_of(10);
  auto h = store.register_data(payload, t0);
  auto ready = store.acquire(h, t0);
  ASSERT_TRUE(ready);
  auto other = store.acquire(h, t0); // a second reader of the same chunk
  ASSERT_TRUE(other);
  auto first = store.pull(ready->transfer_id, 0, t0);
  auto second = store.pull(other->transfer_id, 0, t0);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->data(), second->data()); // views of one buffer, no copies
  ASSERT_FALSE(store.detach(h, other->lease_id));
  auto r = store.release(h, ready->lease_id);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->freed);
  EXPECT_EQ(store.current_stats().staged_bytes, 0u);
  // The slot is gone; the chunk still reads the payload (ASan checks this).
  EXPECT_EQ(byte_buffer(first->data(), first->data() + first->size()),
            byte_buffer(payload.begin(), payload.begin() + 4));
}

TEST_F(SlotStore, SilentRdmaLeaseIsForceReleased) {
  byte_buffer backing(4096);
  auto block = block_over(backing);
  auto h = store.register_pinned(block, 100, t0);
  auto grant = store.acquire_rdma(h, t0, 30ms);
  ASSERT_TRUE(grant);
  EXPECT_EQ(grant->block, block);
  EXPECT_EQ(store.rdma_leases(), 1u);
  EXPECT_FALSE(store.renew(h, grant->lease_id, t0 + 20ms));
  EXPECT_EQ(store.sweep(t0 + 49ms).rdma_leases_reaped, 0u);
  auto r = store.sweep(t0 + 50ms);
  EXPECT_EQ(r.rdma_leases_reaped, 1u);
  EXPECT_EQ(r.leases_expired, 0u);
  EXPECT_EQ(store.rdma_leases(), 0u);
  // The lease and its reference are gone: refcount 1 - 1 = 0 frees the slot.
  EXPECT_EQ(store.current_stats().slots, 0u);
}

namespace {

/// A region slot as the owner stages it: a view block holding an anchor.
data_handle stage_in(slot_store& store, const external_region_ptr& region,
                     uint64_t offset, uint64_t len, slot_store::time_point now) {
  auto anchor = region->try_anchor();
  auto view = std::make_shared<pinned_block>(
    region->data() + offset, len, region->address() + offset,
    std::make_shared<std::vector<uint8_t>>(), 1, [anchor] {});
  return store.register_in_region(std::move(view), region, offset, len, now);
}

} // namespace

TEST_F(SlotStore, RegionSlotsCopyChunksUnderTheCopyGate) {
  auto memory = bytes_of(64);
  auto region = std::make_shared<external_region>(memory.data(), memory.size());
  auto h = stage_in(store, region, 5, 10, t0);
  EXPECT_EQ(region->in_flight(), 1u);
  EXPECT_TRUE(store.metadata(h)->pinned);
  auto ready = store.acquire(h, t0);
  ASSERT_TRUE(ready);
  EXPECT_EQ(pull_chunks(store, *ready, t0),
            byte_buffer(memory.begin() + 5, memory.begin() + 15));
  auto second = store.acquire(h, t0);
  ASSERT_TRUE(second);
  region->latch();
  auto refused = store.pull(second->transfer_id, 0, t0);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::draining));
  ASSERT_FALSE(store.detach(h, second->lease_id));
  ASSERT_TRUE(store.release(h, ready->lease_id));
  EXPECT_EQ(region->in_flight(), 0u) << "freeing the slot drops its anchor";
}

TEST_F(SlotStore, NoRdmaLeaseOnARegionBeingUnregistered) {
  auto memory = bytes_of(64);
  auto region = std::make_shared<external_region>(memory.data(), memory.size());
  auto h = stage_in(store, region, 0, 64, t0);
  ASSERT_TRUE(store.acquire_rdma(h, t0, 1s));
  region->close_gate();
  auto no = store.acquire_rdma(h, t0, 1s);
  ASSERT_FALSE(no);
  EXPECT_TRUE(is(no.error(), errc::draining));
}

TEST_F(SlotStore, DemotionCopiesArenaSlotsAndLeavesRegionSlots) {
  auto payload = bytes_of(10);
  bool released = false;
  byte_buffer backing(payload);
  auto block = block_over(backing, [&] { released = true; });
  auto pinned = store.register_pinned(std::move(block), payload.size(), t0);
  auto memory = bytes_of(64);
  auto region = std::make_shared<external_region>(memory.data(), memory.size());
  auto in_region = stage_in(store, region, 0, 64, t0);
  uint64_t demoted = 0;
  for (auto& d : store.plan_demotion())
    demoted += store.finish_demotion(d, byte_buffer(d.block->data(), d.block->data() + d.len));
  EXPECT_EQ(demoted, 1u);
  EXPECT_TRUE(released) << "the arena block went back";
  EXPECT_FALSE(store.metadata(pinned)->pinned);
  EXPECT_TRUE(store.metadata(in_region)->pinned);
  std::fill(backing.begin(), backing.end(), 0); // the old block is gone
  auto ready = store.acquire(pinned, t0);
  ASSERT_TRUE(ready);
  EXPECT_EQ(pull_chunks(store, *ready, t0), payload);
}

TEST_F(SlotStore, DemotionLetsGoOfAPayloadRegisteredInPlace) {
  // The owner stages a payload registered in place as a pinned block over
  // a region that owns the bytes, the block holding the region's anchor:
  // the drain copies it out like an arena slot and the region is free to go.
  auto payload = bytes_of(40);
  byte_buffer buffer = payload;
  char* data = buffer.data(); // a moved vector keeps its memory
  auto region = std::make_shared<external_region>(data, 40, std::move(buffer));
  auto anchor = region->try_anchor();
  auto view = std::make_shared<pinned_block>(data, 40, region->address(),
                                             std::make_shared<std::vector<uint8_t>>(), 1,
                                             [anchor] {});
  anchor.reset();
  auto h = store.register_pinned(std::move(view), 40, t0);
  EXPECT_EQ(region->in_flight(), 1u);
  auto plan = store.plan_demotion();
  ASSERT_EQ(plan.size(), 1u);
  for (auto& d : plan)
    ASSERT_TRUE(store.finish_demotion(d, byte_buffer(d.block->data(), d.block->data() + d.len)));
  plan.clear();
  EXPECT_EQ(region->in_flight(), 0u) << "the slot let go of the region";
  EXPECT_FALSE(store.metadata(h)->pinned);
  auto ready = store.acquire(h, t0);
  ASSERT_TRUE(ready);
  EXPECT_EQ(pull_chunks(store, *ready, t0), payload);
}

TEST_F(SlotStore, ATimeToLiveWaitsForTheSlotsRdmaLeases) {
  bool released = false;
  byte_buffer backing(bytes_of(10));
  auto h = store.register_pinned(block_over(backing, [&] { released = true; }), 10, t0,
                                 std::chrono::milliseconds{100});
  auto grant = store.acquire_rdma(h, t0, 1s);
  ASSERT_TRUE(grant);
  grant->block.reset();
  auto swept = store.sweep(t0 + 500ms); // past the TTL, the GET's lease is live
  EXPECT_EQ(swept.slots_expired, 0u);
  EXPECT_FALSE(released) << "a GET may still read it";
  swept = store.sweep(t0 + 2s); // the silent lease is reaped first
  EXPECT_EQ(swept.rdma_leases_reaped, 1u);
  swept = store.sweep(t0 + 2s);
  EXPECT_TRUE(released);
  EXPECT_EQ(store.current_stats().slots, 0u);
}

TEST_F(SlotStore, HeldLeaseKeepsNoDeadlineOnEitherPath) {
  byte_buffer backing(4096);
  auto block = block_over(backing);
  auto pinned = store.register_pinned(block, 100, t0);
  auto plain = store.register_data(bytes_of(10), t0);
  auto grant = store.acquire_rdma(pinned, t0, 30ms, 7);
  auto ready = store.acquire(plain, t0, 30ms, 7);
  ASSERT_TRUE(grant && ready);
  EXPECT_EQ(store.current_stats().transfers, 1u);
  ASSERT_FALSE(store.hold(pinned, grant->lease_id));
  ASSERT_FALSE(store.hold(plain, ready->lease_id));
  EXPECT_EQ(store.rdma_leases(), 0u); // no descriptor out any more
  EXPECT_EQ(store.current_stats().transfers, 0u);
  EXPECT_EQ(store.current_stats().leases, 2u);
  EXPECT_FALSE(store.has_deadlines());
  auto swept = store.sweep(t0 + 1h);
  EXPECT_EQ(swept.rdma_leases_reaped + swept.leases_expired, 0u);
  // A held lease reads no more chunks; it ends the same way on both paths.
  EXPECT_TRUE(is(store.pull(ready->transfer_id, 0, t0).error(),
                 errc::unknown_transfer));
  auto r1 = store.release(pinned, grant->lease_id);
  auto r2 = store.release(plain, ready->lease_id);
  ASSERT_TRUE(r1 && r2);
  EXPECT_TRUE(r1->freed && r2->freed);
  EXPECT_TRUE(is(store.hold(plain, ready->lease_id), errc::unknown_handle));
}

TEST_F(SlotStore, HoldOfAnUnknownLeaseIsAnError) {
  auto h = store.register_data(bytes_of(10), t0);
  EXPECT_TRUE(is(store.hold(h, 99), errc::unknown_lease));
  EXPECT_TRUE(is(store.hold(data_handle{worker + 1, h.lo}, 1), errc::unknown_handle));
}

TEST_F(SlotStore, DropHolderEndsOnlyThatHoldersLeases) {
  auto a = store.register_data(bytes_of(10), t0);
  auto b = store.register_data(bytes_of(10), t0);
  auto gone1 = store.acquire(a, t0, 0ms, 5);
  auto gone2 = store.acquire(b, t0, 10s, 5);
  auto stays = store.acquire(a, t0, 0ms, 6);
  auto local = store.acquire(b, t0);
  ASSERT_TRUE(gone1 && gone2 && stays && local);
  ASSERT_FALSE(store.hold(a, gone1->lease_id));
  EXPECT_EQ(store.drop_holder(0).leases, 0u); // this node's own leases never go so
  EXPECT_EQ(store.drop_holder(5).leases, 2u);
  EXPECT_EQ(store.drop_holder(5).leases, 0u);
  auto s = store.current_stats();
  EXPECT_EQ(s.leases, 2u);
  EXPECT_EQ(s.transfers, 2u);
  EXPECT_FALSE(store.has_deadlines());
  EXPECT_TRUE(is(store.detach(b, gone2->lease_id), errc::unknown_lease));
  // References are not the holder's: both slots stay until released.
  EXPECT_EQ(s.slots, 2u);
  ASSERT_TRUE(store.release(a, stays->lease_id));
  EXPECT_EQ(store.current_stats().slots, 1u);
}

TEST_F(SlotStore, DropHolderFreesASlotNobodyReferences) {
  auto h = store.register_data(bytes_of(10), t0);
  auto ready = store.acquire(h, t0, 0ms, 9);
  ASSERT_TRUE(ready);
  ASSERT_TRUE(store.release(h, store.acquire(h, t0)->lease_id)); // refcount 0
  EXPECT_EQ(store.current_stats().slots, 1u); // the holder's lease still reads
  EXPECT_EQ(store.drop_holder(9).leases, 1u);
  EXPECT_EQ(store.current_stats().slots, 0u);
  EXPECT_EQ(store.current_stats().staged_bytes, 0u);
}

TEST_F(SlotStore, ACopyAddressedToANodeThatGoesAwayIsFreedWithoutWaitingForItsTimeToLive) {
  auto h = store.register_data(bytes_of(10), t0, 1h);
  ASSERT_FALSE(store.address_to(h, 7));
  EXPECT_EQ(store.drop_holder(6).copies, 0u); // another node: it stays
  EXPECT_EQ(store.current_stats().slots, 1u);
  auto dropped = store.drop_holder(7);
  EXPECT_EQ(dropped.leases, 0u);
  EXPECT_EQ(dropped.copies, 1u);
  EXPECT_EQ(store.current_stats().slots, 0u);
  EXPECT_EQ(store.current_stats().staged_bytes, 0u);
}

TEST_F(SlotStore, AnAddressedCopyMidFetchByItsNodeGoesWithTheNodesLease) {
  auto h = store.register_data(bytes_of(10), t0);
  ASSERT_FALSE(store.address_to(h, 7));
  ASSERT_TRUE(store.acquire(h, t0, 0ms, 7));
  auto dropped = store.drop_holder(7);
  EXPECT_EQ(dropped.leases, 1u);
  EXPECT_EQ(dropped.copies, 1u);
  EXPECT_EQ(store.current_stats().slots, 0u);
}

TEST_F(SlotStore, AnAddressedCopyKeepsTheReferencesOfOtherLeasesAndIsDroppedOnce) {
  auto h = store.register_data(bytes_of(10), t0);
  ASSERT_FALSE(store.address_to(h, 7));
  auto local = store.acquire(h, t0); // a reader of this node
  ASSERT_TRUE(local);
  ASSERT_TRUE(store.ref(h));        // refcount 2: stager and the local reader
  EXPECT_EQ(store.drop_holder(7).copies, 1u);
  EXPECT_EQ(store.drop_holder(7).copies, 0u);
  EXPECT_EQ(store.current_stats().slots, 1u); // the local lease still reads
  ASSERT_TRUE(store.release(h, local->lease_id));
  EXPECT_EQ(store.current_stats().slots, 0u);
}

TEST_F(SlotStore, AddressingAGoneSlotOrThisNodeIsRefused) {
  auto h = store.register_data(bytes_of(10), t0);
  EXPECT_TRUE(is(store.address_to(h, 0), errc::invalid_argument));
  ASSERT_TRUE(store.unref(h));
  EXPECT_TRUE(is(store.address_to(h, 7), errc::unknown_handle));
  EXPECT_EQ(store.drop_holder(7).copies, 0u);
}

TEST_F(SlotStore, TheOldestSlotsSayWhatKeepsEach) {
  auto old_copy = store.register_data(bytes_of(10), t0, 60s);
  ASSERT_FALSE(store.address_to(old_copy, 7));
  auto read = store.register_data(bytes_of(20), t0 + 1s);
  ASSERT_TRUE(store.acquire(read, t0 + 1s, 0ms, 9)); // no deadline
  ASSERT_TRUE(store.acquire(read, t0 + 1s, 5s, 9));
  (void) store.register_data(bytes_of(30), t0 + 2s);

  auto shown = store.oldest_slots(t0 + 10s, 2);
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown[0].handle, old_copy);
  EXPECT_EQ(shown[0].bytes, 10u);
  EXPECT_EQ(shown[0].refcount, 1u);
  EXPECT_EQ(shown[0].addressed_to, 7u);
  EXPECT_EQ(shown[0].age, 10s);
  ASSERT_TRUE(shown[0].expires_in);
  EXPECT_EQ(*shown[0].expires_in, 50s);
  EXPECT_EQ(shown[1].handle, read);
  EXPECT_EQ(shown[1].leases, 2u);
  EXPECT_EQ(shown[1].held_leases, 1u);
  EXPECT_EQ(shown[1].addressed_to, 0u);
  EXPECT_FALSE(shown[1].expires_in);
  EXPECT_EQ(store.oldest_slots(t0 + 10s, 8).size(), 3u);
}

TEST_F(SlotStore, ADemotionCopyHandedBackLateChangesNothingItShouldNot) {
  byte_buffer backing(4096);
  auto block = block_over(backing);
  auto kept = store.register_pinned(block, 10, t0);
  auto gone = store.register_pinned(block, 10, t0);
  auto plan = store.plan_demotion();
  ASSERT_EQ(plan.size(), 2u);
  auto r = store.release(gone, store.acquire(gone, t0)->lease_id); // freed meanwhile
  ASSERT_TRUE(r && r->freed);
  size_t took = 0;
  for (auto& d : plan)
    took += store.finish_demotion(d, byte_buffer(d.block->data(), d.block->data() + d.len))
              ? 1
              : 0;
  EXPECT_EQ(took, 1u);
  EXPECT_FALSE(store.metadata(kept)->pinned); // now plain memory
  EXPECT_FALSE(store.finish_demotion(plan[0], byte_buffer(10))); // twice: no
  EXPECT_FALSE(store.finish_demotion({kept.lo, nullptr, 10}, byte_buffer(3)));
}

TEST_F(SlotStore, TheLastChunkServedClosesTheTransferAndTheLeaseKeepsItsDeadlineUntilItsHold) {
  auto h = store.register_data(bytes_of(10), t0); // 3 chunks of 4
  auto ready = store.acquire(h, t0, 50ms, 3);
  ASSERT_TRUE(ready);
  EXPECT_TRUE(store.has_deadlines());
  ASSERT_TRUE(store.pull(ready->transfer_id, 2, t0));
  ASSERT_TRUE(store.pull(ready->transfer_id, 0, t0));
  EXPECT_EQ(store.current_stats().transfers, 1u);
  ASSERT_TRUE(store.pull(ready->transfer_id, 1, t0 + 10ms)); // the last one served
  EXPECT_EQ(store.current_stats().transfers, 0u);
  EXPECT_TRUE(is(store.pull(ready->transfer_id, 0, t0).error(), errc::unknown_transfer));
  // Its consumer's hold makes it a held lease: no deadline from then on.
  EXPECT_TRUE(store.has_deadlines());
  ASSERT_FALSE(store.hold(h, ready->lease_id));
  EXPECT_FALSE(store.has_deadlines());
  EXPECT_EQ(store.sweep(t0 + 1h).leases_expired, 0u);
  EXPECT_EQ(store.current_stats().leases, 1u);
  EXPECT_EQ(store.drop_holder(3).leases, 1u); // still its node's
}

TEST_F(SlotStore, AConsumerThatSendsNoHoldHasItsLeaseHeldAsItsTransferIsDone) {
  // A consumer from before holds: the owner holds its lease by itself.
  auto h = store.register_data(bytes_of(10), t0);
  auto ready = store.acquire(h, t0, 50ms, 3, false);
  ASSERT_TRUE(ready);
  EXPECT_TRUE(store.has_deadlines());
  ASSERT_EQ(pull_chunks(store, *ready, t0), bytes_of(10));
  EXPECT_FALSE(store.has_deadlines());
  EXPECT_EQ(store.sweep(t0 + 1h).leases_expired, 0u);
  EXPECT_EQ(store.current_stats().leases, 1u);
  auto empty = store.register_data({}, t0);
  ASSERT_TRUE(store.acquire(empty, t0, 50ms, 3, false));
  EXPECT_FALSE(store.has_deadlines());
  EXPECT_EQ(store.sweep(t0 + 1h).leases_expired, 0u);
}

TEST_F(SlotStore, AFinishedTransferWhoseHoldNeverComesEndsWithItsDeadline) {
  // The last chunk's answer (or an eager one) lost on the way: the consumer
  // never holds the lease, and it must not stay for as long as its node.
  auto h = store.register_data(bytes_of(10), t0);
  auto ready = store.acquire(h, t0, 50ms, 3);
  ASSERT_TRUE(ready);
  ASSERT_EQ(pull_chunks(store, *ready, t0 + 10ms), bytes_of(10));
  EXPECT_EQ(store.sweep(t0 + 55ms).leases_expired, 0u); // 50 ms from the last pull
  // The stager frees its payload by a get and a release of its own (as
  // the soak does for a failed get): the lost lease alone keeps the slot.
  auto own = store.acquire(h, t0 + 20ms, 0ms);
  ASSERT_TRUE(own);
  auto released = store.release(h, own->lease_id);
  ASSERT_TRUE(released);
  EXPECT_FALSE(released->freed);
  EXPECT_EQ(store.current_stats().slots, 1u);
  EXPECT_EQ(store.sweep(t0 + 61ms).leases_expired, 1u);
  EXPECT_EQ(store.current_stats().leases, 0u);
  EXPECT_EQ(store.current_stats().slots, 0u);
  EXPECT_FALSE(store.has_deadlines());
}

TEST_F(SlotStore, AChunkPulledTwiceIsRefusedAndNeitherRenewsNorClosesTheTransfer) {
  auto h = store.register_data(bytes_of(10), t0); // 3 chunks of 4
  auto ready = store.acquire(h, t0, 50ms, 3);
  ASSERT_TRUE(ready);
  ASSERT_TRUE(store.pull(ready->transfer_id, 0, t0));
  ASSERT_TRUE(store.pull(ready->transfer_id, 1, t0));
  // Pulled again, twice: refused, and counted nowhere (three pulls would
  // otherwise close a transfer of three chunks with chunk 2 never served).
  for (int i = 0; i < 2; ++i) {
    auto again = store.pull(ready->transfer_id, 1, t0 + 40ms);
    ASSERT_FALSE(again);
    EXPECT_TRUE(is(again.error(), errc::protocol_violation)) << describe(again.error());
    EXPECT_NE(describe(again.error()).find("chunk 1 of transfer"), std::string::npos);
  }
  EXPECT_EQ(store.current_stats().transfers, 1u);
  // The refused pull renewed nothing: the deadline is still 50 ms from t0.
  EXPECT_EQ(store.sweep(t0 + 60ms).leases_expired, 1u);
  EXPECT_EQ(store.current_stats().leases, 0u);
  // A fresh lease serves every chunk once and its transfer is then done.
  auto next = store.acquire(h, t0, 50ms, 3);
  ASSERT_TRUE(next);
  EXPECT_EQ(pull_chunks(store, *next, t0), bytes_of(10));
  EXPECT_EQ(store.current_stats().transfers, 0u);
  EXPECT_EQ(store.current_stats().leases, 1u);
}

TEST_F(SlotStore, AnEmptyPayloadsTransferIsDoneAtOnceAndItsLeaseWaitsForItsHold) {
  auto h = store.register_data({}, t0);
  auto ready = store.acquire(h, t0, 50ms);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->chunk_count, 0u);
  EXPECT_EQ(ready->transfer_id, 0u);
  EXPECT_EQ(store.current_stats().transfers, 0u);
  EXPECT_TRUE(store.has_deadlines());
  ASSERT_FALSE(store.hold(h, ready->lease_id));
  EXPECT_FALSE(store.has_deadlines());
  auto r = store.release(h, ready->lease_id);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->freed);
  // Never held: its deadline ends it.
  auto again = store.register_data({}, t0);
  ASSERT_TRUE(store.acquire(again, t0, 50ms));
  EXPECT_EQ(store.sweep(t0 + 60ms).leases_expired, 1u);
}

// -- blocks a GET given up may still read --------------------------------------

TEST_F(SlotStore, ABlockFreedWhileAGetMayRunIsHandedOutWithItsReaders) {
  byte_buffer backing(64);
  bool freed = false;
  auto h = store.register_pinned(block_over(backing, [&] { freed = true; }), 64, t0);
  auto grant = store.acquire_rdma(h, t0, 1s, 7);
  ASSERT_TRUE(grant);
  grant->block.reset(); // the descriptor went out; the store keeps the block
  // The consumer gave its GET up: the slot goes, its block does not.
  ASSERT_FALSE(store.detach(h, grant->lease_id, true));
  ASSERT_TRUE(store.unref(h));
  EXPECT_EQ(store.current_stats().slots, 0u);
  EXPECT_FALSE(freed);
  auto out = store.take_unsettled();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].len, 64u);
  EXPECT_EQ(out[0].readers, std::set<uint64_t>{7});
  EXPECT_TRUE(store.take_unsettled().empty()) << "handed out once";
  out.clear();
  EXPECT_TRUE(freed);
}

TEST_F(SlotStore, ABlockWhoseGetsEndedGoesAtOnce) {
  // A detach that says the GET ended, a held lease's release, a chunked
  // lease, and a local holder's lease leave no reader behind.
  struct row {
    const char* what;
    std::function<void(slot_store&, const data_handle&)> end;
  };
  const row rows[] = {
    {"GET ended, then detached",
     [](slot_store& s, const data_handle& h) {
       auto g = s.acquire_rdma(h, slot_store::clock_type::now(), 1s, 7);
       ASSERT_FALSE(s.detach(h, g->lease_id, false));
     }},
    {"held, then released as given up",
     [](slot_store& s, const data_handle& h) {
       auto g = s.acquire_rdma(h, slot_store::clock_type::now(), 1s, 7);
       ASSERT_FALSE(s.hold(h, g->lease_id));
       ASSERT_TRUE(s.ref(h));
       ASSERT_TRUE(s.release(h, g->lease_id, true));
     }},
    {"chunked lease",
     [](slot_store& s, const data_handle& h) {
       auto r = s.acquire(h, slot_store::clock_type::now(), 1s, 7);
       ASSERT_FALSE(s.detach(h, r->lease_id, true));
     }},
    {"this node's own lease",
     [](slot_store& s, const data_handle& h) {
       auto g = s.acquire_rdma(h, slot_store::clock_type::now(), 1s, 0);
       ASSERT_FALSE(s.detach(h, g->lease_id, true));
     }},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.what);
    byte_buffer backing(64);
    bool freed = false;
    auto h = store.register_pinned(block_over(backing, [&] { freed = true; }), 64, t0);
    r.end(store, h);
    (void) store.unref(h);
    EXPECT_EQ(store.current_stats().slots, 0u);
    EXPECT_TRUE(store.take_unsettled().empty());
    EXPECT_TRUE(freed);
  }
}

TEST_F(SlotStore, AReapedOrDroppedRdmaLeaseLeavesItsHolderAsAReader) {
  byte_buffer backing(64);
  // Reaped: its consumer went silent mid-GET (the lease and its reference go).
  auto reaped = store.register_pinned(block_over(backing), 64, t0);
  ASSERT_TRUE(store.acquire_rdma(reaped, t0, 10ms, 3));
  EXPECT_EQ(store.sweep(t0 + 11ms).rdma_leases_reaped, 1u);
  // Dropped: its node went away (then the stager lets go).
  auto dropped = store.register_pinned(block_over(backing), 64, t0);
  ASSERT_TRUE(store.acquire_rdma(dropped, t0, 1s, 5));
  EXPECT_EQ(store.drop_holder(5).leases, 1u);
  ASSERT_TRUE(store.unref(dropped));
  EXPECT_EQ(store.current_stats().slots, 0u);
  auto out = store.take_unsettled();
  ASSERT_EQ(out.size(), 2u);
  std::set<uint64_t> readers;
  for (auto& u : out)
    readers.insert(u.readers.begin(), u.readers.end());
  EXPECT_EQ(readers, (std::set<uint64_t>{3, 5}));
}

TEST_F(SlotStore, AGivenUpReaderStaysWithTheSlotUntilItIsFreed) {
  byte_buffer backing(64);
  auto h = store.register_pinned(block_over(backing), 64, t0);
  auto first = store.acquire_rdma(h, t0, 1s, 4);
  ASSERT_FALSE(store.detach(h, first->lease_id, true));
  EXPECT_TRUE(store.take_unsettled().empty()) << "the slot lives on";
  // A second consumer's clean get, then the stager's unref, free it: the
  // first one's GET may still read it.
  auto second = store.acquire_rdma(h, t0, 1s, 9);
  ASSERT_FALSE(store.hold(h, second->lease_id));
  ASSERT_TRUE(store.ref(h));
  ASSERT_TRUE(store.release(h, second->lease_id));
  ASSERT_TRUE(store.unref(h));
  auto out = store.take_unsettled();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].readers, std::set<uint64_t>{4});
}
