// get_destination: where a get's bytes go, without an actor. Room an owner
// states is checked before it is taken, chunks land where the caller wants
// them, a direct GET's result grows a slice at a time (a warm one is never
// filled) and outlives the destination while the GET's holder keeps it,
// and a finished GET's copy out runs in slices or on the copier by the
// rules in get_destination.hpp.
#include "actors/rendezvous/get_destination.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "protocol/errors.hpp"

namespace {

using ferry::byte_buffer;
using ferry::errc;
using ferry::get_destination;
using ferry::pinned_block;
using ferry::pinned_ptr;
using ferry::transfer;
using copy_out = get_destination::copy_out;

constexpr uint64_t MiB = 1ull << 20;

/// A block over `memory` (no registration), as a GET's destination.
pinned_ptr block_over(byte_buffer& memory, size_t size) {
  return std::make_shared<pinned_block>(memory.data(), size, 0,
                                        std::make_shared<const std::vector<uint8_t>>(), 0,
                                        nullptr);
}

byte_buffer pattern(size_t n) {
  byte_buffer b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = static_cast<char>(i * 31 + 7);
  return b;
}

TEST(GetDestinationRoom, ALengthAboveMemoryOrTheAllocatorIsRefusedNotThrown) {
  byte_buffer buf(10, 'k');
  auto err = ferry::room_for(buf, 2 * MiB, 1 * MiB);
  EXPECT_TRUE(ferry::is(err, errc::payload_too_large)) << ferry::describe(err);
  EXPECT_EQ(buf.size(), 10u); // as it was
  // Past what a vector can hold (the memory unknown): an error, no exception.
  err = ferry::room_for(buf, std::numeric_limits<uint64_t>::max(), 0);
  EXPECT_TRUE(ferry::is(err, errc::payload_too_large)) << ferry::describe(err);
  // Within both: the room is there.
  EXPECT_FALSE(ferry::room_for(buf, 1 * MiB, 2 * MiB));
  EXPECT_GE(buf.capacity(), 1 * MiB);
  EXPECT_GT(ferry::physical_memory_bytes(), 0u);
}

TEST(GetDestinationChunks, ChunksLandInTheResultTheCallersMemoryOrTheBlock) {
  const auto bytes = pattern(300);
  // A plain get: appended to its result buffer, in any order.
  get_destination plain;
  ASSERT_FALSE(plain.reserve(300, nullptr));
  plain.write(200, bytes.data() + 200, 100);
  plain.write(0, bytes.data(), 200);
  EXPECT_EQ(plain.result(), bytes);
  // get_into: the caller's memory, nothing past it.
  byte_buffer caller(310, 'z');
  auto raw = get_destination::caller_memory({caller.data(), 300});
  EXPECT_EQ(raw.caller_room(), 300u);
  raw.write(100, bytes.data() + 100, 200);
  raw.write(0, bytes.data(), 100);
  EXPECT_EQ(0, std::memcmp(caller.data(), bytes.data(), 300));
  EXPECT_EQ(caller[300], 'z');
  // get_pinned: the pool block handed to the caller.
  byte_buffer memory(300);
  get_destination pinned{transfer::into::pinned_result};
  pinned.set_block(block_over(memory, 300));
  pinned.write(0, bytes.data(), 300);
  EXPECT_EQ(memory, bytes);
  EXPECT_EQ(pinned.caller_room(), 0u);
}

TEST(GetDestinationChunks, AWarmResultTakesTheChunksWithNothingOfItsOldBytesLeft) {
  // A buffer given back (node_context::give_back), longer than the payload.
  ferry::warm_buffers warm{256 * MiB};
  warm.give(byte_buffer(6 * MiB, 'o'));
  get_destination d;
  ASSERT_FALSE(d.reserve(4 * MiB + 7, &warm));
  const char* memory = d.result().data();
  EXPECT_EQ(warm.kept_buffers(), 0u);
  const auto bytes = pattern(4 * MiB + 7);
  d.write(2 * MiB, bytes.data() + 2 * MiB, 2 * MiB + 7);
  d.write(0, bytes.data(), 2 * MiB);
  EXPECT_EQ(d.result().data(), memory); // the warm memory, not a new block
  EXPECT_EQ(d.result(), bytes);         // its length and only the chunks' bytes
}

TEST(GetDestinationDirect, AFreshResultGrowsASliceAtATimeAndNeedsNoCopyOut) {
  get_destination d;
  const uint64_t len = 9 * MiB;
  ASSERT_FALSE(d.start_direct(len, nullptr));
  EXPECT_TRUE(d.growing());
  int steps = 1;
  while (!d.grow_step())
    ++steps;
  EXPECT_EQ(steps, 3); // 4, 8, 9 MiB: copy_slice_bytes each
  EXPECT_FALSE(d.growing());
  ASSERT_TRUE(d.block());
  ASSERT_EQ(d.block()->size(), len);
  const char* memory = d.block()->data();
  std::memset(d.block()->data(), 'g', len); // what the GET writes
  EXPECT_EQ(d.finish_get(len, nullptr), copy_out::none);
  EXPECT_EQ(d.result().data(), memory); // the same bytes, not a copy
  ASSERT_EQ(d.result().size(), len);
  EXPECT_EQ(d.result().back(), 'g');
  EXPECT_FALSE(d.block());
}

TEST(GetDestinationDirect, AWarmResultIsCutNeverFilled) {
  ferry::warm_buffers warm{256 * MiB};
  warm.give(byte_buffer(16 * MiB, 'p'));
  get_destination d;
  ASSERT_FALSE(d.start_direct(12 * MiB, &warm));
  EXPECT_TRUE(d.grow_step()); // long enough already: one step, no fill
  ASSERT_EQ(d.block()->size(), 12 * MiB);
  EXPECT_EQ(d.block()->data()[0], 'p');
  EXPECT_EQ(d.block()->data()[12 * MiB - 1], 'p');
  EXPECT_EQ(warm.kept_buffers(), 0u);
}

TEST(GetDestinationDirect, ABufferPreparedWhileTheResultGrowsTakesItsPlace) {
  ferry::warm_buffers warm{256 * MiB};
  get_destination d;
  const uint64_t len = 20 * MiB;
  ASSERT_FALSE(d.start_direct(len, &warm)); // nothing kept yet: fresh room
  EXPECT_FALSE(d.grow_step(&warm));         // 4 of 20 MiB filled
  // The node's prefiller keeps one of this size now (result_prefiller).
  byte_buffer prepared(len, 'r');
  const char* memory = prepared.data();
  ASSERT_TRUE(warm.keep_prepared(std::move(prepared)));
  EXPECT_TRUE(d.grow_step(&warm)); // taken: the rest needs no fill
  EXPECT_EQ(warm.kept_buffers(), 0u);
  ASSERT_EQ(d.block()->size(), len);
  EXPECT_EQ(d.block()->data(), memory);
  EXPECT_EQ(d.block()->data()[len - 1], 'r'); // not filled again
  // Without warm buffers the same growth goes slice by slice.
  get_destination plain;
  ASSERT_FALSE(plain.start_direct(len, nullptr));
  int steps = 1;
  while (!plain.grow_step(nullptr))
    ++steps;
  EXPECT_EQ(steps, 5);
}

TEST(GetDestinationDirect, AnAbandonedGetsResultLivesOnWithItsHolder) {
  get_destination d;
  ASSERT_FALSE(d.start_direct(2 * MiB, nullptr));
  while (!d.grow_step()) {
  }
  pinned_ptr held_by_ucx = d.block(); // the engine keeps an abandoned GET's block
  d.get_failed();
  EXPECT_FALSE(d.block());
  EXPECT_FALSE(d.growing());
  d = get_destination{}; // the consumer moves on to another get
  std::memset(held_by_ucx->data(), 'u', held_by_ucx->size()); // still its memory (ASan)
  EXPECT_EQ(held_by_ucx->data()[2 * MiB - 1], 'u');
}

TEST(GetDestinationCopyOut, AFinishedGetCopiesOutBySizeAndKind) {
  // A plain get: up to sliced_copy_max in slices here, the bytes checked.
  const auto bytes = pattern(6 * MiB);
  byte_buffer registered = bytes;
  get_destination plain;
  plain.set_block(block_over(registered, registered.size()));
  ASSERT_EQ(plain.finish_get(bytes.size(), nullptr), copy_out::slices);
  int steps = 1;
  while (!plain.copy_step())
    ++steps;
  EXPECT_EQ(steps, 2);
  auto block = plain.copied();
  EXPECT_EQ(block->data(), registered.data()); // back to the reader
  EXPECT_FALSE(plain.block());
  EXPECT_EQ(plain.result(), bytes);

  // Small: the copier's path (copy_then runs it inline below bulk_copy_min).
  get_destination small;
  small.set_block(block_over(registered, registered.size()));
  ASSERT_EQ(small.finish_get(4096, nullptr), copy_out::copier);
  EXPECT_EQ(small.job().len, 4096u);
  ferry::run_copy(small.job());
  small.copied();
  EXPECT_EQ(small.result(), byte_buffer(bytes.begin(), bytes.begin() + 4096));

  // Above sliced_copy_max a fresh buffer goes to the copier, a caller's
  // memory never does. (The block claims the size; nothing is copied.)
  const uint64_t large = ferry::sliced_copy_max + MiB;
  get_destination big;
  big.set_block(block_over(registered, large));
  EXPECT_EQ(big.finish_get(large, nullptr), copy_out::copier);
  EXPECT_EQ(big.job().len, large);
  EXPECT_EQ(big.job().dst, nullptr); // into a fresh buffer
  byte_buffer caller(1);
  auto raw = get_destination::caller_memory({caller.data(), large});
  raw.set_block(block_over(registered, large));
  EXPECT_EQ(raw.finish_get(large, nullptr), copy_out::slices);
  EXPECT_EQ(raw.job().dst, caller.data());

  // The block is the result, or the caller's writer: nothing to copy.
  get_destination pinned{transfer::into::pinned_result};
  pinned.set_block(block_over(registered, 64));
  EXPECT_EQ(pinned.finish_get(64, nullptr), copy_out::none);
  EXPECT_TRUE(pinned.result_block());
  auto writer = get_destination::caller_writer(block_over(registered, 64));
  EXPECT_EQ(writer.caller_room(), 64u);
  EXPECT_EQ(writer.finish_get(64, nullptr), copy_out::none);
}

TEST(GetDestinationCopyOut, AFailedGetKeepsOnlyTheCallersWriter) {
  byte_buffer memory(64);
  auto writer = get_destination::caller_writer(block_over(memory, 64));
  writer.get_failed();
  EXPECT_TRUE(writer.block()); // the caller's: never dropped here
  get_destination plain;
  plain.set_block(block_over(memory, 64));
  plain.get_failed();
  EXPECT_FALSE(plain.block());
}

} // namespace
