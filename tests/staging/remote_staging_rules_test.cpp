// Remote staging's plain rules (label remote_staging): the session's
// geometry, the exposures and their exclusive loans, the source ring's
// scope and order checks, and the range's text form.
#include <gtest/gtest.h>

#include "protocol/errors.hpp"
#include "protocol/remote_staging_wire.hpp"
#include "staging/device_exposures.hpp"
#include "staging/fake_cuda.hpp"
#include "staging/remote_geometry.hpp"
#include "staging/source_ring.hpp"

using namespace ferry;
using namespace ferry::staging;

namespace {

TEST(RemoteStagingGeometry, ChunksRingsAndSpans) {
  EXPECT_EQ(chunks_of(0, 4), 0u);
  EXPECT_EQ(chunks_of(8, 4), 2u);
  EXPECT_EQ(chunks_of(9, 4), 3u);
  EXPECT_EQ(ring_width(16, 4, 100), 4u);
  EXPECT_EQ(ring_width(16, 16, 3), 3u);
  EXPECT_EQ(ring_width(1, 16, 0), 1u);
  auto tail = span_of(9, 4, 2);
  EXPECT_EQ(tail.offset, 8u);
  EXPECT_EQ(tail.length, 1u); // the tail keeps its exact length
  EXPECT_EQ(span_of(9, 4, 1).length, 4u);
}

TEST(RemoteStagingGeometry, ThePipelineDepthIsBounded) {
  EXPECT_FALSE(check_pipeline_depth(1, 64));
  EXPECT_FALSE(check_pipeline_depth(16, 64));
  EXPECT_TRUE(is(check_pipeline_depth(0, 64), errc::invalid_argument));
  EXPECT_TRUE(is(check_pipeline_depth(17, 64), errc::invalid_argument));
  auto over = check_pipeline_depth(8, 4); // more than the chunks
  ASSERT_TRUE(is(over, errc::invalid_argument));
  EXPECT_NE(describe(over).find("--staging-chunk-count"), std::string::npos);
}

TEST(RemoteStagingWire, ARangeRoundTripsAsTextAndJunkIsRefused) {
  remote_device_range r{0x1234, 7, 42, 1u << 20};
  auto text = to_string(r);
  auto back = parse_remote_device_range(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(parse_remote_device_range(""));
  EXPECT_FALSE(parse_remote_device_range(text.substr(1)));
  EXPECT_FALSE(parse_remote_device_range("rdr:" + std::string(67, 'z')));
  auto colon = text;
  colon[20] = 'x'; // the first separator
  EXPECT_FALSE(parse_remote_device_range(colon));
}

stage_pin pin_of(uint64_t registration, uint64_t offset, uint64_t length,
                 stage_direction d = stage_direction::read) {
  stage_pin p;
  p.registration = registration;
  p.offset = offset;
  p.length = length;
  p.direction = static_cast<uint8_t>(d);
  return p;
}

TEST(RemoteStagingExposures, PinChecksRegistrationRangeAndPermission) {
  device_exposures x;
  auto id = x.expose({0, 0x1000, 4096, device_access::read});
  EXPECT_TRUE(is(x.lend(pin_of(id + 1, 0, 10), 1).error(), errc::invalid_argument));
  EXPECT_TRUE(is(x.lend(pin_of(id, 4000, 200), 1).error(), errc::invalid_argument));
  EXPECT_TRUE(is(x.lend(pin_of(id, 0, 0), 1).error(), errc::invalid_argument));
  EXPECT_TRUE(is(x.lend(pin_of(id, UINT64_MAX, 2), 1).error(), errc::invalid_argument));
  auto write = x.lend(pin_of(id, 0, 10, stage_direction::write), 1);
  ASSERT_FALSE(write);
  EXPECT_NE(describe(write.error()).find("allows read"), std::string::npos);
  auto ok = x.lend(pin_of(id, 96, 100), 1);
  ASSERT_TRUE(ok) << describe(ok.error());
  EXPECT_EQ(ok->start, 0x1000u + 96);
  EXPECT_EQ(ok->length, 100u);
  EXPECT_EQ(x.loans(), 0u + 1);
}

TEST(RemoteStagingExposures, TwoExposuresOfTheSameBytesShareOneLoan) {
  device_exposures x;
  auto a = x.expose({0, 0x1000, 4096, device_access::read_write});
  auto b = x.expose({0, 0x1800, 4096, device_access::read_write}); // overlaps a
  auto other_device = x.expose({1, 0x1000, 4096, device_access::read_write});
  ASSERT_TRUE(x.lend(pin_of(a, 2048, 100), 1));
  EXPECT_TRUE(is(x.lend(pin_of(b, 0, 100), 2).error(), errc::resource_exhausted));
  EXPECT_TRUE(x.lend(pin_of(b, 200, 100), 3));            // past a's loan
  EXPECT_TRUE(x.lend(pin_of(other_device, 2048, 100), 4)); // another device
}

TEST(RemoteStagingGeometry, AChunkCountMustFitAChunkIndex) {
  EXPECT_TRUE(chunk_count_fits(1ull << 40, 4096));
  EXPECT_FALSE(chunk_count_fits(1ull << 50, 4096));
  EXPECT_FALSE(chunk_count_fits(UINT64_MAX, 1));
  EXPECT_FALSE(chunk_count_fits(10, 0));
}

TEST(RemoteStagingExposures, LoansAreExclusiveAndHoldTheExposure) {
  device_exposures x;
  auto id = x.expose({0, 0x1000, 4096, device_access::read_write});
  ASSERT_TRUE(x.lend(pin_of(id, 0, 100), 1));
  EXPECT_TRUE(is(x.lend(pin_of(id, 50, 100), 2).error(), errc::resource_exhausted));
  EXPECT_TRUE(x.lend(pin_of(id, 100, 100, stage_direction::write), 3)); // beside it
  EXPECT_TRUE(is(x.withdraw(id), errc::resource_exhausted));
  x.give_back(1);
  x.give_back(3);
  EXPECT_EQ(x.loans(), 0u);
  EXPECT_FALSE(x.withdraw(id));
  EXPECT_EQ(x.exposed(), 0u);
  EXPECT_TRUE(is(x.lend(pin_of(id, 0, 10), 4).error(), errc::invalid_argument));
}

source_ring ring(stage_direction d, uint64_t length = 10, uint64_t chunk = 4,
                 uint32_t width = 2) {
  source_ring::scope s;
  s.nonce = 77;
  s.registration = 5;
  s.direction = d;
  s.length = length;
  s.chunk = chunk;
  s.width = width;
  return source_ring{s};
}

stage_frame frame(const source_ring& r, stage_phase phase, uint32_t chunk) {
  stage_frame f;
  f.nonce = 77;
  f.registration = 5;
  f.phase = static_cast<uint8_t>(phase);
  f.chunk = chunk;
  auto s = r.span(chunk);
  f.offset = s.offset;
  f.length = s.length;
  return f;
}

TEST(RemoteStagingSourceRing, AFrameOfAnotherScopeChangesNothing) {
  auto r = ring(stage_direction::read);
  auto f = frame(r, stage_phase::delegate, 0);
  auto wrong = f;
  wrong.nonce = 78;
  EXPECT_TRUE(is(r.delegate(wrong).error(), errc::protocol_violation));
  wrong = f;
  wrong.registration = 6;
  EXPECT_TRUE(is(r.delegate(wrong).error(), errc::protocol_violation));
  wrong = f;
  wrong.phase = static_cast<uint8_t>(stage_phase::cross);
  EXPECT_TRUE(is(r.delegate(wrong).error(), errc::protocol_violation));
  wrong = f;
  wrong.length = 3; // not chunk 0's range
  EXPECT_TRUE(is(r.delegate(wrong).error(), errc::protocol_violation));
  wrong = frame(r, stage_phase::delegate, 2);
  wrong.chunk = 3; // past the last chunk
  EXPECT_TRUE(is(r.delegate(wrong).error(), errc::protocol_violation));
  // None of them took the slot: the right frame still does.
  EXPECT_EQ(*r.delegate(f), 0u);
}

TEST(RemoteStagingSourceRing, AReadRunsDelegateQueryCrossFinishInOrder) {
  auto r = ring(stage_direction::read); // chunks of 4, 4, 2 in two slots
  auto d0 = frame(r, stage_phase::delegate, 0);
  auto d1 = frame(r, stage_phase::delegate, 1);
  auto d2 = frame(r, stage_phase::delegate, 2);
  auto c0 = frame(r, stage_phase::cross, 0);
  EXPECT_TRUE(is(r.delegate(d1).error(), errc::protocol_violation)); // out of order
  EXPECT_TRUE(is(r.query(d0).error(), errc::protocol_violation));    // early
  EXPECT_TRUE(is(r.cross(c0, 0, 4).error(), errc::protocol_violation));
  ASSERT_EQ(*r.delegate(d0), 0u);
  ASSERT_EQ(*r.delegate(d1), 1u);
  EXPECT_TRUE(is(r.delegate(d2).error(), errc::protocol_violation)); // slot 0 busy
  EXPECT_EQ(r.copying().size(), 2u);
  ASSERT_EQ(*r.query(d0), 0u);
  EXPECT_TRUE(is(r.cross(c0, 0, 4).error(), errc::protocol_violation)); // not confirmed
  r.copy_done(0);
  EXPECT_TRUE(is(r.query(d0).error(), errc::protocol_violation)); // duplicate
  EXPECT_TRUE(is(r.cross(c0, 2, 4).error(), errc::protocol_violation)); // past the chunk
  ASSERT_TRUE(r.cross(c0, 0, 4));
  ASSERT_TRUE(r.finish_cross(c0));
  EXPECT_TRUE(is(r.finish_cross(c0).error(), errc::protocol_violation)); // twice
  EXPECT_EQ(*r.delegate(d2), 0u); // the freed slot takes chunk 2
}

TEST(RemoteStagingSourceRing, AWriteCrossesEveryPieceBeforeItsDelegate) {
  auto r = ring(stage_direction::write);
  auto c0 = frame(r, stage_phase::cross, 0);
  auto c1 = frame(r, stage_phase::cross, 1);
  auto d0 = frame(r, stage_phase::delegate, 0);
  EXPECT_TRUE(is(r.delegate(d0).error(), errc::protocol_violation)); // nothing crossed
  EXPECT_TRUE(is(r.cross(c1, 0, 4).error(), errc::protocol_violation)); // out of order
  EXPECT_TRUE(is(r.cross(c0, 2, 2).error(), errc::protocol_violation)); // not its first piece
  auto s = r.cross(c0, 0, 2);
  ASSERT_TRUE(s);
  r.received(*s, 2);
  EXPECT_TRUE(is(r.finish_cross(c0).error(), errc::protocol_violation)); // half of it
  EXPECT_TRUE(is(r.cross(c0, 0, 2).error(), errc::protocol_violation)); // the same piece
  ASSERT_TRUE(r.cross(c0, 2, 2));
  r.received(*s, 2);
  ASSERT_TRUE(r.finish_cross(c0));
  ASSERT_TRUE(r.delegate(d0));
  ASSERT_TRUE(r.query(d0));
  r.copy_done(0);
  EXPECT_EQ(r.at(0).state, source_ring::slot_state::free);
}

TEST(RemoteStagingSourceRing, AWriteChunkLandingByGetTakesNothingElseUntilItLanded) {
  auto r = ring(stage_direction::write);
  auto c0 = frame(r, stage_phase::cross, 0);
  auto c1 = frame(r, stage_phase::cross, 1);
  EXPECT_TRUE(is(r.cross_by_get(c1).error(), errc::protocol_violation)); // out of order
  auto s = r.cross_by_get(c0);
  ASSERT_TRUE(s);
  EXPECT_EQ(r.at(*s).state, source_ring::slot_state::landing);
  // While its GET runs: no second GET, no piece of bytes, no FinishCross.
  EXPECT_TRUE(is(r.cross_by_get(c0).error(), errc::protocol_violation));
  EXPECT_TRUE(is(r.cross(c0, 0, 4).error(), errc::protocol_violation));
  EXPECT_TRUE(is(r.finish_cross(c0).error(), errc::protocol_violation));
  // The next chunk's slot is another one: it may land meanwhile.
  auto s1 = r.cross_by_get(c1);
  ASSERT_TRUE(s1);
  EXPECT_NE(*s1, *s);
  r.landed(*s);
  EXPECT_TRUE(is(r.cross(c0, 0, 4).error(), errc::protocol_violation)); // all came
  ASSERT_TRUE(r.finish_cross(c0));
  EXPECT_EQ(r.at(*s).state, source_ring::slot_state::filled);
  // A READ's source never fetches.
  auto rr = ring(stage_direction::read);
  EXPECT_TRUE(is(rr.cross_by_get(frame(rr, stage_phase::cross, 0)).error(),
                 errc::protocol_violation));
}

TEST(RemoteStagingSourceRing, UnpinNamesTheWholeRange) {
  auto r = ring(stage_direction::read);
  stage_frame u;
  u.nonce = 77;
  u.registration = 5;
  u.phase = static_cast<uint8_t>(stage_phase::unpin);
  u.length = 10;
  EXPECT_FALSE(r.unpin(u));
  u.length = 9;
  EXPECT_TRUE(is(r.unpin(u), errc::protocol_violation));
}

TEST(RemoteStagingMemoryKind, TheFakeTellsDeviceHostAndUnknown) {
  fake_cuda api;
  auto ctx = *api.retain_context(0);
  ASSERT_FALSE(api.push_context(ctx));
  auto d = *api.mem_alloc(4096);
  std::vector<char> host(4096), plain(64);
  ASSERT_FALSE(api.host_register(host.data(), host.size()));
  EXPECT_EQ(*api.memory_kind_of(d, 4096), memory_kind::device);
  EXPECT_EQ(*api.memory_kind_of(d + 1, 4096), memory_kind::unknown); // leaves its allocation
  EXPECT_EQ(*api.memory_kind_of(reinterpret_cast<device_ptr>(host.data()), 4096),
            memory_kind::host);
  EXPECT_EQ(*api.memory_kind_of(reinterpret_cast<device_ptr>(plain.data()), 64),
            memory_kind::unknown);
  api.host_unregister(host.data());
  api.mem_free(d);
  api.pop_context();
  api.release_context(0);
}

} // namespace
