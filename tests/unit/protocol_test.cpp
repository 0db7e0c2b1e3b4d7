// Protocol: handle forms and the rendezvous bodies, including version skew
// (missing and unknown fields) and malformed input.
#include <gtest/gtest.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "protocol/byte_buffer.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/errors.hpp"
#include "protocol/peer_hello.hpp"
#include "protocol/rv_messages.hpp"
#include "protocol/type_registry.hpp"

using namespace ferry;

namespace {

const data_handle sample{0x0123456789abcdefULL, 0xfedcba9876543210ULL};

} // namespace

TEST(ProtocolHandle, TextRoundTrip) {
  auto text = to_string(sample);
  EXPECT_EQ(text, "0123456789abcdef-fedcba9876543210");
  auto back = parse_data_handle(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sample);
  EXPECT_EQ(parse_data_handle("0123456789ABCDEF-FEDCBA9876543210"), sample);
}

TEST(ProtocolHandle, TextRejectsAnythingElse) {
  for (auto bad : {"", "0123456789abcdef", "0123456789abcdef-fedcba987654321",
                   "0123456789abcdef:fedcba9876543210",
                   "0123456789abcdeg-fedcba9876543210",
                   "0123456789abcdef-fedcba98765432100", " 123456789abcdef-fedcba9876543210"})
    EXPECT_FALSE(parse_data_handle(bad)) << bad;
}

TEST(ProtocolHandle, JsonIsHiLo) {
  nlohmann::json j = sample;
  EXPECT_EQ(j, (nlohmann::json{{"hi", sample.hi}, {"lo", sample.lo}}));
  EXPECT_EQ(j.get<data_handle>(), sample);
}

TEST(ProtocolHandle, MsgpackIsMapHiLo) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, sample);
  auto oh = msgpack::unpack(buf.data(), buf.size());
  auto obj = oh.get();
  ASSERT_EQ(obj.type, msgpack::type::MAP);
  ASSERT_EQ(obj.via.map.size, 2u);
  EXPECT_EQ(obj.via.map.ptr[0].key.as<std::string>(), "hi");
  EXPECT_EQ(obj.via.map.ptr[1].key.as<std::string>(), "lo");
  EXPECT_EQ(obj.as<data_handle>(), sample);
}

TEST(ProtocolHandle, CafSerializationRoundTrip) {
  caf::actor_system_config cfg;
  register_protocol_types(cfg);
  caf::actor_system sys{cfg};
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto h = sample;
  ASSERT_FALSE(sink(h));
  data_handle back;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(back));
  EXPECT_EQ(back, sample);
}

class ProtocolChunk : public ::testing::Test {
protected:
  ProtocolChunk() : sys{(register_protocol_types(cfg), cfg)} {}
  caf::actor_system_config cfg;
  caf::actor_system sys;
};

TEST_F(ProtocolChunk, AViewKeepsItsBytesAliveAndCrossesTheWireLikeAByteVector) {
  auto payload = std::make_shared<byte_buffer>(100);
  for (size_t i = 0; i < payload->size(); ++i)
    (*payload)[i] = static_cast<char>(i * 7 + 1);
  byte_buffer expected(payload->begin() + 10, payload->begin() + 50);
  auto chunk = chunk_bytes::view(payload, payload->data() + 10, 40);
  payload.reset(); // the view alone keeps the memory
  EXPECT_EQ(byte_buffer(chunk.data(), chunk.data() + chunk.size()), expected);

  std::vector<char> wire, vector_wire;
  caf::binary_serializer sink{sys, wire};
  ASSERT_FALSE(sink(chunk));
  caf::binary_serializer vector_sink{sys, vector_wire};
  ASSERT_FALSE(vector_sink(expected));
  EXPECT_EQ(wire, vector_wire);

  chunk_bytes back;
  caf::binary_deserializer source{sys, wire};
  ASSERT_FALSE(source(back));
  EXPECT_EQ(byte_buffer(back.data(), back.data() + back.size()), expected);
  EXPECT_NE(back.data(), chunk.data()); // its own buffer
}

TEST_F(ProtocolChunk, ATruncatedChunkIsAnErrorNotAnAllocationOfItsStatedSize) {
  byte_buffer bytes(1000, 'q');
  std::vector<char> wire;
  caf::binary_serializer sink{sys, wire};
  ASSERT_FALSE(sink(bytes));
  wire.resize(wire.size() / 2);
  chunk_bytes back;
  caf::binary_deserializer source{sys, wire};
  EXPECT_TRUE(source(back));
  EXPECT_EQ(back.size(), 0u); // left as it was
  chunk_bytes empty;
  std::vector<char> empty_wire;
  caf::binary_serializer empty_sink{sys, empty_wire};
  ASSERT_FALSE(empty_sink(empty));
  caf::binary_deserializer empty_source{sys, empty_wire};
  ASSERT_FALSE(empty_source(back));
  EXPECT_EQ(back.size(), 0u);
}

TEST(ProtocolBodies, AcquireRoundTrip) {
  rv_acquire_request req;
  req.handle = sample;
  req.rdma = rdma_offer{{"ucx"}};
  req.lease_ms = 250;
  req.holds = true;
  auto back = decode<rv_acquire_request>(encode(req));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->handle, sample);
  ASSERT_TRUE(back->rdma);
  EXPECT_EQ(back->rdma->backends, std::vector<std::string>{"ucx"});
  EXPECT_EQ(back->lease_ms, 250u);
  EXPECT_TRUE(back->holds);
}

TEST(ProtocolBodies, AcquireFromAnOldConsumerHasNoOfferAndNoDeadline) {
  auto back = decode<rv_acquire_request>(R"({"handle":{"hi":1,"lo":2}})");
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->rdma);
  EXPECT_EQ(back->lease_ms, 0u);
  EXPECT_FALSE(back->holds); // nor does it send a hold after a chunked get
  rv_acquire_request plain;
  plain.handle = sample;
  EXPECT_EQ(encode(plain).find("holds"), std::string::npos);
}

TEST(ProtocolBodies, UnknownFieldsAreIgnored) {
  auto back = decode<rv_acquire_request>(
    R"({"handle":{"hi":1,"lo":2,"extra":true},"future":{"x":[1,2]},"lease_ms":7})");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->handle, (data_handle{1, 2}));
  EXPECT_EQ(back->lease_ms, 7u);
}

TEST(ProtocolBodies, ReadyAndRdmaAnswersRoundTrip) {
  rv_acquire_response ready;
  ready.ready = rv_ready{1, 2, 524288, 3, 1048577};
  auto r = decode<rv_acquire_response>(encode(ready));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->ready);
  EXPECT_FALSE(r->rdma);
  EXPECT_EQ(r->ready->chunk_count, 3u);
  EXPECT_EQ(r->ready->total_len, 1048577u);

  rv_acquire_response rdma;
  rdma.rdma = rv_rdma_grant{9, {0x01, 0xff, 0x00}, 30000, 4096};
  auto g = decode<rv_acquire_response>(encode(rdma));
  ASSERT_TRUE(g);
  ASSERT_TRUE(g->rdma);
  EXPECT_EQ(g->rdma->descriptor, (std::vector<uint8_t>{0x01, 0xff, 0x00}));
  EXPECT_EQ(g->rdma->lease_timeout_ms, 30000u);
}

TEST(ProtocolBodies, RdmaAnswerWithoutLeaseTimeoutMeansNoDeadline) {
  auto g = decode<rv_acquire_response>(
    R"({"rdma":{"lease_id":3,"descriptor":"0a0b","total_len":5}})");
  ASSERT_TRUE(g);
  ASSERT_TRUE(g->rdma);
  EXPECT_EQ(g->rdma->lease_timeout_ms, 0u);
}

TEST(ProtocolBodies, RenewCarriesHeldOnlyWhenSet) {
  auto plain = encode(rv_lease_renew_request{sample, 8});
  EXPECT_EQ(plain.find("held"), std::string::npos); // an old owner's body
  auto back = decode<rv_lease_renew_request>(plain);
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->held);
  auto held = decode<rv_lease_renew_request>(
    encode(rv_lease_renew_request{sample, 8, true}));
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->held);
  EXPECT_EQ(held->lease_id, 8u);
  EXPECT_FALSE(decode<rv_lease_renew_request>(
    R"({"handle":{"hi":1,"lo":2},"lease_id":1,"held":1})"));
}

TEST(ProtocolBodies, DurationsFromPeersAreClamped) {
  auto acq = decode<rv_acquire_request>(
    R"({"handle":{"hi":1,"lo":2},"lease_ms":18446744073709551615})");
  ASSERT_TRUE(acq);
  EXPECT_EQ(acq->lease_ms, max_wire_duration_ms);
  auto g = decode<rv_acquire_response>(
    R"({"rdma":{"lease_id":3,"descriptor":"0a","lease_timeout_ms":18446744073709551615,"total_len":5}})");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->rdma->lease_timeout_ms, max_wire_duration_ms);
  // Clamped values still fit a signed millisecond count with room to add.
  EXPECT_LT(max_wire_duration_ms, uint64_t{1} << 40);
}

TEST(ProtocolBodies, ChunkCountNeverOverflows) {
  EXPECT_EQ(chunks_for(0, 512), 0u);
  EXPECT_EQ(chunks_for(1, 512), 1u);
  EXPECT_EQ(chunks_for(512, 512), 1u);
  EXPECT_EQ(chunks_for(513, 512), 2u);
  constexpr auto top = ~uint64_t{0};
  EXPECT_EQ(chunks_for(top, 524288), top / 524288 + 1);
  EXPECT_EQ(chunks_for(top, top), 1u);
  EXPECT_EQ(chunks_for(top, 1), top);
}

TEST(ProtocolBodies, SmallBodiesRoundTrip) {
  EXPECT_EQ(decode<rv_pull_request>(encode(rv_pull_request{5, 6}))->index, 6u);
  EXPECT_EQ(decode<rv_ref_response>(encode(rv_ref_response{3}))->refcount, 3u);
  auto rel = decode<rv_release_response>(encode(rv_release_response{0, true}));
  ASSERT_TRUE(rel);
  EXPECT_TRUE(rel->freed);
  auto md = decode<rv_metadata_response>(encode(rv_metadata_response{10, 2, true}));
  ASSERT_TRUE(md);
  EXPECT_EQ(md->total_len, 10u);
  EXPECT_TRUE(md->pinned);
  auto det = decode<rv_detach_request>(encode(rv_detach_request{sample, 77}));
  ASSERT_TRUE(det);
  EXPECT_EQ(det->lease_id, 77u);
  EXPECT_FALSE(det->get_unfinished);
  auto renew = decode<rv_lease_renew_request>(encode(rv_lease_renew_request{sample, 8}));
  ASSERT_TRUE(renew);
  EXPECT_EQ(renew->handle, sample);
}

TEST(ProtocolBodies, AGivenUpGetIsSaidOnlyWhenSoAndMeansNothingToOldOwners) {
  data_handle h{1, 2};
  // An old consumer's detach and release mean "the GET ended".
  EXPECT_EQ(encode(rv_detach_request{h, 5}).find("get_unfinished"), std::string::npos);
  auto det = decode<rv_detach_request>(encode(rv_detach_request{h, 5, true}));
  ASSERT_TRUE(det);
  EXPECT_TRUE(det->get_unfinished);
  auto rel = decode<rv_release_request>(encode(rv_release_request{h, 6, true}));
  ASSERT_TRUE(rel);
  EXPECT_TRUE(rel->get_unfinished);
  EXPECT_EQ(rel->lease_id, 6u);
  EXPECT_FALSE(decode<rv_release_request>(encode(rv_release_request{h, 6}))->get_unfinished);
  // Not a boolean: a clear error.
  auto text = encode(rv_detach_request{h, 5, true});
  auto at = text.find("true");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 4, "\"yes\"");
  auto bad = decode<rv_detach_request>(text);
  ASSERT_FALSE(bad);
  EXPECT_NE(describe(bad.error()).find("get_unfinished"), std::string::npos)
    << describe(bad.error());
}

TEST(ProtocolBodies, MalformedBodiesAreClearErrors) {
  const char* bad[] = {
    "",
    "not json",
    "[1,2,3]",
    "{}",
    R"({"handle":{"hi":1}})",
    R"({"handle":{"hi":-1,"lo":2}})",
    R"({"handle":{"hi":1.5,"lo":2}})",
    R"({"handle":"0123"})",
    R"({"handle":{"hi":1,"lo":2},"rdma":"ucx"})",
    R"({"handle":{"hi":1,"lo":2},"rdma":{"backends":[1]}})",
    R"({"handle":{"hi":1,"lo":2},"lease_ms":"soon"})",
    R"({"handle":{"hi":1,"lo":2})",
  };
  for (auto body : bad) {
    auto r = decode<rv_acquire_request>(body);
    ASSERT_FALSE(r) << body;
    EXPECT_TRUE(is(r.error(), errc::malformed_body)) << body;
    EXPECT_NE(describe(r.error()).find("malformed_body"), std::string::npos);
  }
  EXPECT_FALSE(decode<rv_pull_request>(R"({"transfer_id":1})"));
  EXPECT_FALSE(decode<rv_acquire_response>(R"({"neither":{}})"));
  EXPECT_FALSE(decode<rv_acquire_response>(
    R"({"rdma":{"lease_id":3,"descriptor":"0g","total_len":5}})"));
}

TEST(ProtocolErrors, DescribeNamesCodeAndContext) {
  auto err = make_error(errc::unknown_handle, "no slot for handle x");
  EXPECT_TRUE(is(err, errc::unknown_handle));
  EXPECT_FALSE(is(err, errc::unknown_lease));
  EXPECT_EQ(describe(err), "unknown_handle: no slot for handle x");
  EXPECT_EQ(describe(caf::error{}), "no error");
}

TEST(ProtocolBuffer, PlaceAtBuildsThePayloadFromChunksInAnyOrder) {
  const size_t chunk = 5, total = 23; // five chunks, the last one short
  byte_buffer src(total);
  for (size_t i = 0; i < total; ++i)
    src[i] = static_cast<char>('a' + i);
  const std::vector<std::vector<size_t>> orders = {
    {0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {1, 0, 3, 2, 4}, {2, 4, 0, 3, 1}};
  for (const auto& order : orders) {
    byte_buffer dst;
    reserve_for_bulk(dst, total);
    for (auto index : order) {
      auto offset = index * chunk;
      place_at(dst, offset, src.data() + offset, std::min(chunk, total - offset));
    }
    EXPECT_EQ(dst, src) << "order starting " << order[0] << order[1];
  }
}

TEST(ProtocolBuffer, ReserveEmptiesAndLeavesRoomForTheWholePayload) {
  for (size_t n : {size_t{9}, size_t{5} << 20}) {
    byte_buffer buf(3, 'x');
    reserve_for_bulk(buf, n);
    EXPECT_TRUE(buf.empty());
    EXPECT_GE(buf.capacity(), n);
    auto* room = buf.data();
    byte_buffer part(n / 2, 'y');
    place_at(buf, 0, part.data(), part.size());
    place_at(buf, part.size(), part.data(), part.size());
    EXPECT_EQ(buf.data(), room) << "appends within the room must not reallocate";
  }
}

TEST(ProtocolBuffer, BulkAssignCopiesExactlyAndReplacesOldContents) {
  for (size_t n : {size_t{0}, size_t{7}, size_t{5} << 20}) { // 5 MiB: huge-page advice
    byte_buffer src(n);
    for (size_t i = 0; i < n; ++i)
      src[i] = static_cast<char>((i * 31 + 7) % 253);
    byte_buffer dst(3, 'x'); // old contents must go
    assign_for_bulk(dst, src.data(), n);
    EXPECT_EQ(dst, src) << n;
  }
}

TEST_F(ProtocolChunk, AHelloOutOfBoundsIsRefusedNamingTheField) {
  peer_hello h;
  h.worker_id = 5;
  // (An argument: CAF 0.17 dereferences a null tuple for an argument-less
  // spawn, which UBSan reports.)
  h.gateway = sys.spawn([](caf::event_based_actor*, int) { return caf::behavior{[](int) {}}; },
                        0);
  h.ucx_address.resize(peer_hello_limits::max_ucx_address);
  h.capabilities = {"chunked", "ucx"};
  EXPECT_FALSE(check_hello(h));
  auto refused = [&](peer_hello bad, const char* words) {
    auto err = check_hello(bad);
    EXPECT_TRUE(is(err, errc::protocol_violation)) << words;
    EXPECT_NE(describe(err).find(words), std::string::npos) << describe(err);
  };
  auto big = h;
  big.ucx_address.push_back(0);
  refused(big, "UCX address of 16385 bytes");
  auto zero = h;
  zero.worker_id = 0;
  refused(zero, "worker id 0");
  auto none = h;
  none.gateway = nullptr;
  refused(none, "no gateway");
  auto host = h;
  host.host.assign(256, 'h');
  refused(host, "host name");
  auto caps = h;
  caps.capabilities.assign(33, "x");
  refused(caps, "33 capabilities");
  auto cap = h;
  cap.capabilities = {std::string(256, 'c')};
  refused(cap, "capability name");
  caf::anon_send_exit(h.gateway, caf::exit_reason::user_shutdown);
}

TEST(ProtocolHandle, MessagePackFromAPeerIsUnpackedWithinTightLimits) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, sample);
  auto back = unpack_data_handle(buf.data(), buf.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sample);
  std::string trailing(buf.data(), buf.size());
  trailing.push_back('\0');
  EXPECT_FALSE(unpack_data_handle(trailing.data(), trailing.size()));
  EXPECT_FALSE(unpack_data_handle(buf.data(), buf.size() - 1));
  // Found by fuzz_handle: a map of 5 whose first key states a 2^32-entry
  // array; msgpack-c would allocate for it before reading a byte of it.
  const unsigned char huge[] = {0x85, 0xdd, 0x97, 0x8c, 0x22, 0x3a, 0x2d, 0x37, 0x39, 0x7d};
  EXPECT_FALSE(unpack_data_handle(reinterpret_cast<const char*>(huge), sizeof(huge)));
  const unsigned char wrong_type[] = {0x82, 0xa2, 'h', 'i', 0xa1, 'x', 0xa2, 'l', 'o', 0x01};
  EXPECT_FALSE(
    unpack_data_handle(reinterpret_cast<const char*>(wrong_type), sizeof(wrong_type)));
}

TEST_F(ProtocolChunk, ALengthPrefixWrittenLongerThanNeededStillLoads) {
  // Found by fuzz_chunk: 0x80 0x00 is a two-byte encoding of length 0.
  const char wire[] = {static_cast<char>(0x80), 0x00};
  chunk_bytes c;
  caf::binary_deserializer source{sys, wire, sizeof(wire)};
  ASSERT_FALSE(source(c));
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(source.remaining(), 0u);
}

TEST(ProtocolHello, AStatedUcxAddressLengthIsBoundedBeforeAnyAllocation) {
  // A hello stating a 4 GiB UCX address in a few bytes: CAF alone would
  // resize the vector to 4 GiB before failing (fuzz_hello found it).
  std::vector<char> wire;
  caf::binary_serializer sink{static_cast<caf::execution_unit*>(nullptr), wire};
  uint64_t worker = 5, incarnation = 1;
  std::vector<std::string> caps;
  size_t huge = size_t{1} << 32;
  ASSERT_FALSE(sink(worker, incarnation, caps));
  ASSERT_FALSE(sink.begin_sequence(huge));
  peer_hello hello;
  caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr), wire};
  auto err = source(hello);
  ASSERT_TRUE(err);
  EXPECT_TRUE(hello.ucx_address.empty());
  // Under the bound but past the message's bytes: refused as well.
  std::vector<char> short_wire;
  caf::binary_serializer short_sink{static_cast<caf::execution_unit*>(nullptr), short_wire};
  size_t stated = 1000;
  ASSERT_FALSE(short_sink(worker, incarnation, caps));
  ASSERT_FALSE(short_sink.begin_sequence(stated));
  caf::binary_deserializer short_source{static_cast<caf::execution_unit*>(nullptr),
                                        short_wire};
  EXPECT_TRUE(short_source(hello));
  EXPECT_TRUE(hello.ucx_address.empty());
}

TEST(ProtocolBodies, TheEagerFieldsGoOnlyWhenSetAndMeanNothingToOldPeers) {
  rv_acquire_request req;
  req.handle = sample;
  EXPECT_EQ(encode(req).find("eager"), std::string::npos); // an old consumer's body
  req.eager_max = 16384;
  auto back = decode<rv_acquire_request>(encode(req));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->eager_max, 16384u);
  rv_acquire_response plain;
  plain.ready = rv_ready{1, 2, 524288, 1, 100};
  EXPECT_EQ(encode(plain).find("eager"), std::string::npos); // an old owner's answer
  auto p = decode<rv_acquire_response>(encode(plain));
  ASSERT_TRUE(p && p->ready);
  EXPECT_FALSE(p->ready->eager);
  auto eager = plain;
  eager.ready->eager = true;
  auto e = decode<rv_acquire_response>(encode(eager));
  ASSERT_TRUE(e && e->ready);
  EXPECT_TRUE(e->ready->eager);
  EXPECT_FALSE(decode<rv_acquire_request>(R"({"handle":{"hi":1,"lo":2},"eager_max":-1})"));
  EXPECT_FALSE(decode<rv_acquire_response>(
    R"({"ready":{"lease_id":1,"transfer_id":2,"chunk_size":4,"chunk_count":1,"total_len":3,"eager":"yes"}})"));
}
