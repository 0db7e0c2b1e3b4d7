// The consumer's warm RDMA state between real processes (a `ferry node`
// owner, an in-process consumer node): the unpacked-rkey cache is hit by
// repeated GETs from one owner registration, misses for an arena the owner
// unmapped and mapped again (the bytes stay right), and is dropped when the
// peer's endpoint is replaced or the peer is forgotten; the warm destination
// serves the next large GET; a result the caller gives back is where the next
// get's bytes land, and so is a buffer the node prepared after the last one.
// Counts come from the UCX engine's stat reply and the node's metrics.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/rdma/ucx_engine.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "protocol/rdma_descriptor.hpp"
#include "protocol/rv_messages.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"
#include "tests/rdma/engine_stat.hpp"
#include "tests/rdma/ucx_transports.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using test::node_process;

namespace {

constexpr uint64_t MiB_ = 1024 * 1024;

struct RdmaWarm : ::testing::TestWithParam<std::string> {
  bool gets_into_result = true; // the node's default on these transports
  // Off here, where tests count the kept buffers (on by default:
  // RdmaWarmPrefill below).
  bool prefill = false;
  void SetUp() override {
    setenv("UCX_TLS", test::ucx_tls_for(GetParam()).c_str(), 1);
    test::allow_emulated_gets_for(GetParam());
    setenv("UCX_NET_DEVICES", "lo", 1);
    owner = std::make_unique<node_process>(
      std::vector<std::string>{"--metrics-port", "0"},
      std::vector<std::string>{"UCX_TLS=" + test::ucx_tls_for(GetParam())});
    node_config c;
    c.listen = false;
    c.request_timeout_ms = 30000;
    c.gets_into_result = gets_into_result;
    c.warm_buffer_prefill = prefill;
    local = std::make_unique<node>(c);
    ASSERT_FALSE(local->start());
    auto hello = local->connect(owner->endpoint());
    ASSERT_TRUE(hello) << describe(hello.error());
    owner_hello = *hello;
    client = std::make_unique<blocking_client>(*local);
    ASSERT_TRUE(local->has_ucx());
  }

  data_handle stage(const byte_buffer& bytes) {
    auto mine = client->register_data(bytes);
    EXPECT_TRUE(mine);
    auto h = client->adopt(caf::actor_cast<gateway_actor>(owner_hello.gateway), *mine,
                           true);
    EXPECT_TRUE(h) << describe(h.error());
    return *h;
  }

  /// Gets `h` over RDMA, checks the bytes against `want`, detaches (the
  /// slot stays for the next get).
  void get_and_check(const data_handle& h, const byte_buffer& want) {
    auto ok_before = local->paths().value(transfer_path::rdma, path_reason::ok);
    auto got = client->get(h);
    ASSERT_TRUE(got) << describe(got.error());
    ASSERT_EQ(got->bytes.size(), want.size());
    EXPECT_EQ(checksum64(got->bytes.data(), got->bytes.size()),
              checksum64(want.data(), want.size()));
    EXPECT_EQ(local->paths().value(transfer_path::rdma, path_reason::ok), ok_before + 1);
    ASSERT_FALSE(client->detach(h, got->lease_id));
  }

  /// The descriptor the owner answers for `h` now (the lease is detached).
  rdma_descriptor descriptor_of(const data_handle& h) {
    caf::scoped_actor self{local->system()};
    rv_acquire_request req;
    req.handle = h;
    req.rdma = rdma_offer{{"ucx"}};
    rdma_descriptor out;
    self
      ->request(caf::actor_cast<owner_actor>(owner_hello.owner), 10s,
                rv_acquire_atom::value, encode(req))
      .receive(
        [&](std::string& body) {
          auto r = decode<rv_acquire_response>(body);
          ASSERT_TRUE(r && r->rdma);
          auto d = decode_descriptor(r->rdma->descriptor.data(),
                                     r->rdma->descriptor.size());
          ASSERT_TRUE(d);
          out = *d.descriptor;
          EXPECT_FALSE(client->detach(h, r->rdma->lease_id));
        },
        [&](caf::error& err) { FAIL() << describe(err); });
    return out;
  }

  /// Three gets of one 64 MiB payload staged on the owner, bytes checked;
  /// the engine's stat after them.
  nlohmann::json three_large_gets() {
    auto big = test::payload(64 * MiB_, 3);
    auto h = stage(big);
    for (int i = 0; i < 3; ++i)
      get_and_check(h, big);
    return engine_stat();
  }

  /// Gets a payload, gives its result back and gets a smaller one: the
  /// second result is the first one's memory (no new buffer), cut to its
  /// length, with the second payload's bytes and nothing of the first.
  void a_result_given_back_takes_the_next_get() {
    auto first_bytes = test::payload(8 * MiB_, 4);
    auto second_bytes = test::payload(6 * MiB_ + 3, 5);
    auto first_handle = stage(first_bytes);
    auto second_handle = stage(second_bytes);
    const auto& warm = local->context().warm;
    ASSERT_TRUE(warm); // --warm-buffer-bytes' default keeps some
    auto first = client->get(first_handle);
    ASSERT_TRUE(first) << describe(first.error());
    ASSERT_FALSE(client->detach(first_handle, first->lease_id));
    const char* memory = first->bytes.data();
    EXPECT_EQ(warm->kept_buffers(), 0u);
    client->give_back(std::move(first->bytes));
    EXPECT_TRUE(first->bytes.empty());
    EXPECT_EQ(warm->kept_buffers(), 1u);
    auto ok_before = local->paths().value(transfer_path::rdma, path_reason::ok);
    auto second = client->get(second_handle);
    ASSERT_TRUE(second) << describe(second.error());
    ASSERT_FALSE(client->detach(second_handle, second->lease_id));
    EXPECT_EQ(local->paths().value(transfer_path::rdma, path_reason::ok), ok_before + 1);
    EXPECT_EQ(second->bytes.data(), memory);
    EXPECT_EQ(warm->kept_buffers(), 0u);
    ASSERT_EQ(second->bytes.size(), second_bytes.size());
    EXPECT_EQ(checksum64(second->bytes.data(), second->bytes.size()),
              checksum64(second_bytes.data(), second_bytes.size()));
  }

  nlohmann::json engine_stat() { return test::engine_stat(*local, 5s); }

  uint64_t cache(const char* field) {
    return engine_stat()["rkey_cache"][field].get<uint64_t>();
  }

  std::unique_ptr<node_process> owner;
  std::unique_ptr<node> local;
  std::unique_ptr<blocking_client> client;
  peer_hello owner_hello;
};

} // namespace

INSTANTIATE_TEST_SUITE_P(Transports, RdmaWarm, ::testing::Values("tcp", "sm", "posix"),
                         [](const auto& info) { return info.param; });

TEST_P(RdmaWarm, RepeatedGetsFromOneArenaUnpackItsKeyOnce) {
  // Two slots in the owner's first pooled arena: one unpack, then hits.
  auto a = test::payload(1 * MiB_, 1);
  auto b = test::payload(2 * MiB_ + 5, 2);
  auto ha = stage(a);
  auto hb = stage(b);
  get_and_check(ha, a);
  EXPECT_EQ(cache("unpacks"), 1u);
  EXPECT_EQ(cache("hits"), 0u);
  get_and_check(hb, b);
  get_and_check(ha, a);
  EXPECT_EQ(cache("unpacks"), 1u);
  EXPECT_EQ(cache("hits"), 2u);
  EXPECT_EQ(cache("entries"), 1u);
}

TEST_P(RdmaWarm, RepeatedLargeGetsLandInTheirResultAndReuseTheKey) {
  // 64 MiB, a dedicated arena on the owner; each GET lands in the result
  // buffer it returns (no registered destination, nothing to copy out).
  auto s = three_large_gets();
  EXPECT_EQ(s["rkey_cache"]["unpacks"], 1u);
  EXPECT_EQ(s["rkey_cache"]["hits"], 2u);
  EXPECT_EQ(s["warm_destination"]["kept"], 0u) << s.dump();
  EXPECT_EQ(s["warm_destination"]["held_bytes"], 0u);
}

TEST_P(RdmaWarm, AResultGivenBackIsWhereTheNextGetLands) {
  // The GET lands in the result: the warm buffer is its destination.
  a_result_given_back_takes_the_next_get();
}

TEST_P(RdmaWarm, AStoppedNodeFreesItsWarmBuffersAndWhatIsGivenBackLater) {
  auto bytes = test::payload(8 * MiB_, 6);
  auto h = stage(bytes);
  auto got = client->get(h);
  ASSERT_TRUE(got) << describe(got.error());
  ASSERT_FALSE(client->detach(h, got->lease_id));
  auto warm = local->context().warm; // as a worker's copy of its context holds it
  warm->give(byte_buffer(8 * MiB_, 'k'));
  ASSERT_EQ(warm->kept_buffers(), 1u);
  local->stop();
  EXPECT_EQ(warm->kept_buffers(), 0u); // freed with the node
  client->give_back(std::move(got->bytes)); // after the stop: freed, no crash
  warm->give(byte_buffer(8 * MiB_, 'k'));
  EXPECT_EQ(warm->kept_buffers(), 0u);
}

/// As on a NIC, where a GET's destination must be registered memory.
struct RdmaWarmRegistered : RdmaWarm {
  RdmaWarmRegistered() { gets_into_result = false; }
};

INSTANTIATE_TEST_SUITE_P(Transports, RdmaWarmRegistered,
                         ::testing::Values("tcp", "sm", "posix"),
                         [](const auto& info) { return info.param; });

TEST_P(RdmaWarmRegistered, RepeatedLargeGetsReuseTheKeyAndTheWarmDestination) {
  // 64 MiB: a dedicated arena on both sides.
  auto s = three_large_gets();
  EXPECT_EQ(s["rkey_cache"]["unpacks"], 1u);
  EXPECT_EQ(s["rkey_cache"]["hits"], 2u);
  EXPECT_EQ(s["warm_destination"]["kept"], 3u) << s.dump();
  EXPECT_EQ(s["warm_destination"]["reused"], 2u);
  EXPECT_EQ(s["warm_destination"]["held_bytes"], 64 * MiB_);
}

TEST_P(RdmaWarmRegistered, AResultGivenBackIsWhereTheNextGetIsCopiedOut) {
  // The GET lands in a registered block; the copy out goes to the warm buffer.
  a_result_given_back_takes_the_next_get();
}

TEST_P(RdmaWarm, AnArenaMappedAgainIsANewKeyAndTheBytesStayRight) {
  // The owner stages A in a dedicated arena, frees it (unmapped at once),
  // then stages B of the same size: a new arena, often at the same address
  // and (over posix) with identical packed key bytes. Only the generation
  // tells the two apart; a cache keyed on the bytes alone would read A's
  // pages for B.
  auto a = test::payload(64 * MiB_, 11);
  auto b = test::payload(64 * MiB_, 12);
  auto ha = stage(a);
  auto da = descriptor_of(ha);
  get_and_check(ha, a);
  get_and_check(ha, a); // a hit: the key of A's arena is cached
  EXPECT_EQ(cache("unpacks"), 1u);
  // Release the last reference: the slot goes, and its arena with it.
  auto got = client->get(ha); // another hit
  ASSERT_TRUE(got);
  ASSERT_TRUE(client->release(ha, got->lease_id));
  auto hb = stage(b);
  auto db = descriptor_of(hb);
  std::cout << "[ info ] arena A gen " << da.generation << " at 0x" << std::hex
            << da.addr << ", arena B gen " << std::dec << db.generation << " at 0x"
            << std::hex << db.addr << std::dec << "; same key bytes: "
            << (da.rkey == db.rkey ? "yes" : "no") << "\n";
  EXPECT_NE(da.generation, db.generation);
  get_and_check(hb, b);
  get_and_check(hb, b);
  EXPECT_EQ(cache("unpacks"), 2u);
  EXPECT_EQ(cache("hits"), 3u);
}

TEST_P(RdmaWarm, ForgettingThePeerDropsItsKeys) {
  auto bytes = test::payload(1 * MiB_, 5);
  auto h = stage(bytes);
  get_and_check(h, bytes);
  EXPECT_EQ(cache("entries"), 1u);
  caf::anon_send(local->ucx_engine().actor(), ucx_forget_atom::value,
                 owner_hello.worker_id);
  local->ucx_engine().wake();
  auto s = engine_stat();
  EXPECT_EQ(s["rkey_cache"]["invalidations"], 1u);
  EXPECT_EQ(s["rkey_cache"]["entries"], 0u);
  // Its address went too: the next GET needs its hello again.
  auto before = local->paths().value(transfer_path::rdma, path_reason::ok);
  auto got = client->get(h);
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(local->paths().value(transfer_path::rdma, path_reason::ok), before);
  ASSERT_FALSE(client->detach(h, got->lease_id));
  caf::anon_send(local->ucx_engine().actor(), ucx_peer_atom::value, owner_hello.worker_id,
                 owner_hello.ucx_address, owner_hello.gateway, GetParam() == "tcp");
  local->ucx_engine().wake();
  get_and_check(h, bytes);
  EXPECT_EQ(cache("unpacks"), 2u);
  EXPECT_EQ(cache("hits"), 0u);
}

TEST_P(RdmaWarm, APeerThatDiesTakesItsKeysWithIt) {
  auto bytes = test::payload(1 * MiB_, 4);
  auto h = stage(bytes);
  get_and_check(h, bytes);
  EXPECT_EQ(cache("entries"), 1u);
  owner->kill(SIGKILL);
  // The gateway notices the peer is gone and tells the engine; wait for it
  // (bounded), then check the keys went.
  for (int i = 0; i < 200 && cache("entries") != 0; ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(cache("entries"), 0u);
  EXPECT_EQ(cache("invalidations"), 1u);
}

TEST_P(RdmaWarm, ANewHelloFromThePeerReplacesItsEndpointAndDropsItsKeys) {
  auto bytes = test::payload(1 * MiB_, 6);
  auto h = stage(bytes);
  get_and_check(h, bytes);
  EXPECT_EQ(cache("entries"), 1u);
  ASSERT_TRUE(local->connect(owner->endpoint())); // hello again: new address
  uint64_t invalidated = 0;
  for (int i = 0; i < 100 && invalidated == 0; ++i) {
    invalidated = cache("invalidations");
    if (invalidated == 0)
      std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(invalidated, 1u);
  get_and_check(h, bytes);
  EXPECT_EQ(cache("unpacks"), 2u);
}

/// The node's default: after a plain get it prepares a buffer of the
/// result's size for the next one (actors/rendezvous/result_prefiller.hpp).
struct RdmaWarmPrefill : RdmaWarm {
  RdmaWarmPrefill() { prefill = true; }
};

INSTANTIATE_TEST_SUITE_P(Transports, RdmaWarmPrefill, ::testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });

TEST_P(RdmaWarmPrefill, EachPlainGetLandsInTheBufferPreparedAfterTheOneBefore) {
  auto bytes = test::payload(8 * MiB_ + 7, 21);
  auto h = stage(bytes);
  const auto& warm = local->context().warm;
  ASSERT_TRUE(warm);
  auto metric = [&](const char* name) {
    return test::registry_value(local->metrics_registry(), name);
  };
  get_and_check(h, bytes); // fresh room; one of its size is prepared after it
  ASSERT_TRUE(test::eventually([&] {
    return metric("ferry_messenger_warm_buffer_prefills_total") == 1;
  }));
  EXPECT_EQ(warm->kept_buffers(), 1u);
  EXPECT_GE(warm->kept_bytes(), bytes.size());
  EXPECT_EQ(metric("ferry_messenger_warm_buffer_reuses_total"), 0);
  for (int i = 1; i <= 3; ++i) {
    // The GET lands in the prepared buffer (its zeros are all overwritten:
    // the checksum), and the next one is prepared.
    get_and_check(h, bytes);
    EXPECT_EQ(metric("ferry_messenger_warm_buffer_reuses_total"), i);
    ASSERT_TRUE(test::eventually([&] {
      return metric("ferry_messenger_warm_buffer_prefills_total") == i + 1;
    })) << i;
    EXPECT_EQ(warm->kept_buffers(), 1u);
  }
}
