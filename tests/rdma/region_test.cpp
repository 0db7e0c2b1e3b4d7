// Staging in caller-registered memory (register_external_memory /
// register_owned + register_data_in_region) between real processes, over
// UCX_TLS=tcp and over shared memory: the zero-copy RDMA path, ranges, the
// budget, unregister drained / timed out (check 8 after it), a dropped
// guard, and the shutdown drain (check 7, demotion of arena slots, regions
// released by the node's stop).
#include <gtest/gtest.h>

#include <cstdlib>

#include <caf/all.hpp>
#include <prometheus/registry.h>

#include "actors/rendezvous/path_metrics.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"
#include "tests/rdma/ucx_transports.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using test::node_process;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

/// This process is the owner (its memory is registered); a `ferry node`
/// process is the consumer, told to adopt (pull and keep) our handles.
struct Region : ::testing::TestWithParam<std::string> {
  void SetUp() override {
    setenv("UCX_TLS", test::ucx_tls_for(GetParam()).c_str(), 1);
    test::allow_emulated_gets_for(GetParam());
    setenv("UCX_NET_DEVICES", "lo", 1);
  }

  void start(node_config cfg = owner_config()) {
    peer = std::make_unique<node_process>(
      std::vector<std::string>{"--metrics-port", "0"},
      std::vector<std::string>{"UCX_TLS=" + test::ucx_tls_for(GetParam())});
    local = std::make_unique<node>(cfg);
    ASSERT_FALSE(local->start());
    ASSERT_TRUE(local->has_ucx());
    auto hello = local->connect(peer->endpoint());
    ASSERT_TRUE(hello) << describe(hello.error());
    peer_gateway = caf::actor_cast<gateway_actor>(hello->gateway);
    client = std::make_unique<blocking_client>(*local);
  }

  static node_config owner_config() {
    node_config c;
    c.request_timeout_ms = 30000;
    return c;
  }

  /// The peer pulls `h` from us and keeps its own copy; that copy's bytes.
  caf::expected<byte_buffer> pull_through_peer(const data_handle& h) {
    auto copy = client->adopt(peer_gateway, h, false);
    if (!copy)
      return copy.error();
    auto got = client->get(*copy);
    if (!got)
      return got.error();
    client->release(*copy, got->lease_id);
    return std::move(got->bytes);
  }

  double decisions(transfer_path path, path_reason reason) {
    return local->paths().value(path, reason);
  }

  double local_metric(const char* name) {
    return test::registry_value(local->metrics_registry(), name);
  }

  static uint64_t sum_of(const char* p, uint64_t n) { return checksum64(p, n); }

  std::unique_ptr<node_process> peer;
  std::unique_ptr<node> local;
  std::unique_ptr<blocking_client> client;
  gateway_actor peer_gateway;
};

TEST_P(Region, ASliceTakesTheRdmaPathWithNoCopy) {
  start();
  auto buffer = test::payload(8 * MiB + 100, 7);
  auto want = sum_of(buffer.data() + 4096 + 17, 5 * MiB + 3);
  auto guard = client->register_owned(buffer);
  ASSERT_TRUE(guard) << describe(guard.error());
  EXPECT_TRUE(buffer.empty()) << "the node holds the buffer now";
  EXPECT_EQ(local_metric("ferry_rdma_registrations_total"), 1.0) // kind=external
    << "no arena was mapped: registering the region is the only one";
  auto h = client->register_data_in_region(*guard, 4096 + 17, 5 * MiB + 3);
  ASSERT_TRUE(h) << describe(h.error());
  auto bytes = pull_through_peer(*h);
  ASSERT_TRUE(bytes) << describe(bytes.error());
  EXPECT_EQ(bytes->size(), 5 * MiB + 3);
  EXPECT_EQ(sum_of(bytes->data(), bytes->size()), want);
  EXPECT_EQ(decisions(transfer_path::rdma, path_reason::ok), 1.0);
  auto peer_ok = test::series_value(
    test::scrape_metrics(peer->metrics_port()),
    "ferry_rendezvous_rdma_path_total{path=\"rdma\",reason=\"ok\"}");
  EXPECT_EQ(peer_ok, 1.0) << "the consumer GETs too";
  // The adopting peer released our slot: nothing anchors the region.
  auto back = guard->unregister_owned(5s);
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(back->size(), 8 * MiB + 100);
  EXPECT_EQ(sum_of(back->data(), back->size()),
            sum_of(test::payload(8 * MiB + 100, 7).data(), 8 * MiB + 100));
  EXPECT_EQ(local_metric("ferry_rdma_live_regions"), 0.0);
  EXPECT_EQ(local_metric("ferry_rdma_registered_bytes"), 0.0);
}

TEST_P(Region, ExternalMemoryStaysTheCallersAndRangesAreChecked) {
  start();
  auto memory = test::payload(MiB, 3);
  auto guard = client->register_external_memory(memory.data(), memory.size());
  ASSERT_TRUE(guard) << describe(guard.error());
  auto [begin, end] = guard->effective_range();
  EXPECT_LE(begin, reinterpret_cast<uintptr_t>(memory.data()));
  EXPECT_GE(end, reinterpret_cast<uintptr_t>(memory.data()) + memory.size());
  auto outside = client->register_data_in_region(*guard, MiB - 10, 11);
  ASSERT_FALSE(outside);
  EXPECT_TRUE(is(outside.error(), errc::invalid_argument)) << describe(outside.error());
  auto wraps = client->register_data_in_region(*guard, 16, ~0ull);
  ASSERT_FALSE(wraps);
  EXPECT_TRUE(is(wraps.error(), errc::invalid_argument));
  auto none = client->register_external_memory(nullptr, 10);
  ASSERT_FALSE(none);
  EXPECT_TRUE(is(none.error(), errc::invalid_argument));
  // A write by the caller is what the next reader sees: no copy was taken.
  auto h = client->register_data_in_region(*guard, 0, 64 * 1024 + 1);
  ASSERT_TRUE(h);
  memory[100] = static_cast<char>(memory[100] + 1);
  auto want = sum_of(memory.data(), 64 * 1024 + 1);
  auto bytes = pull_through_peer(*h);
  ASSERT_TRUE(bytes) << describe(bytes.error());
  EXPECT_EQ(sum_of(bytes->data(), bytes->size()), want);
  auto how = guard->unregister(5s);
  ASSERT_TRUE(how);
  EXPECT_EQ(*how, deregistered::drained);
}

TEST_P(Region, OverTheBudgetTheBufferComesBack) {
  auto cfg = owner_config();
  cfg.registered_bytes_budget = MiB;
  start(cfg);
  auto buffer = test::payload(2 * MiB, 5);
  auto want = sum_of(buffer.data(), buffer.size());
  auto guard = client->register_owned(buffer);
  ASSERT_FALSE(guard);
  EXPECT_TRUE(is(guard.error(), errc::budget_exhausted)) << describe(guard.error());
  ASSERT_EQ(buffer.size(), 2 * MiB) << "a refusal does not consume the buffer";
  EXPECT_EQ(sum_of(buffer.data(), buffer.size()), want);
  EXPECT_EQ(local_metric("ferry_rdma_registered_bytes"), 0.0);
}

TEST_P(Region, UnregisterTimesOutOnALiveSlotThenReadsAreRefused) {
  start();
  auto buffer = test::payload(MiB, 9);
  auto guard = client->register_owned(buffer);
  ASSERT_TRUE(guard);
  auto h = client->register_data_in_region(*guard, 0, MiB);
  ASSERT_TRUE(h);
  auto watch = guard->watch();
  EXPECT_EQ(watch.in_flight(), 1u) << "the slot anchors the region";
  auto how = guard->unregister(200ms);
  ASSERT_TRUE(how) << describe(how.error());
  EXPECT_EQ(*how, deregistered::drain_timed_out);
  EXPECT_TRUE(watch.deregistered());
  // Staging in it again is refused; the old slot still exists, but its
  // bytes are gone: the acquire answers chunked (check 8) and the pull is
  // refused with a clear error, on both transports, without a crash.
  auto again = client->register_data_in_region(*guard, 0, 10);
  ASSERT_FALSE(again);
  auto bytes = pull_through_peer(*h);
  ASSERT_FALSE(bytes);
  EXPECT_NE(describe(bytes.error()).find("unregistered"), std::string::npos)
    << describe(bytes.error());
  EXPECT_EQ(decisions(transfer_path::chunked, path_reason::not_pinned), 1.0);
  EXPECT_EQ(decisions(transfer_path::rdma, path_reason::ok), 0.0);
}

TEST_P(Region, ADroppedGuardUnregistersInTheBackground) {
  start();
  std::optional<region_watch> watch;
  {
    auto buffer = test::payload(MiB, 2);
    auto guard = client->register_owned(buffer);
    ASSERT_TRUE(guard);
    watch = guard->watch();
    EXPECT_EQ(local_metric("ferry_rdma_live_regions"), 1.0);
  }
  auto how = watch->wait_deregistered(10s);
  ASSERT_TRUE(how);
  EXPECT_EQ(*how, deregistered::drained);
  EXPECT_EQ(local_metric("ferry_rdma_registered_bytes"), 0.0);
}

TEST_P(Region, TheShutdownDrainAnswersChunkedAndReleasesRegions) {
  auto cfg = owner_config();
  cfg.shutdown_timeout_ms = 500;
  start(cfg);
  auto buffer = test::payload(2 * MiB, 4);
  auto want_region = sum_of(buffer.data(), buffer.size());
  auto guard = client->register_owned(buffer);
  ASSERT_TRUE(guard);
  auto in_region = client->register_data_in_region(*guard, 0, 2 * MiB);
  ASSERT_TRUE(in_region);
  ASSERT_TRUE(client->ref(*in_region)); // a second reference outlives the pull
  auto arena_bytes = test::payload(3 * MiB, 8);
  auto in_arena = client->register_data_pinned(arena_bytes);
  ASSERT_TRUE(in_arena);
  ASSERT_TRUE(client->metadata(*in_arena)->pinned);
  // Begin the drain on the owner as stop() does first.
  uint64_t demoted = 0;
  {
    caf::scoped_actor self{local->system()}; // gone before stop() joins
    self->request(local->owner(), 10s, drain_atom::value)
      .receive([&](uint64_t n) { demoted = n; },
               [&](caf::error& err) { FAIL() << describe(err); });
  }
  EXPECT_EQ(demoted, 1u);
  EXPECT_FALSE(client->metadata(*in_arena)->pinned);
  // A region slot on a draining owner: chunked, reason draining (check 7).
  auto bytes = pull_through_peer(*in_region);
  ASSERT_TRUE(bytes) << describe(bytes.error());
  EXPECT_EQ(sum_of(bytes->data(), bytes->size()), want_region);
  EXPECT_EQ(decisions(transfer_path::chunked, path_reason::draining), 1.0);
  // A demoted slot: plain memory now, so not_pinned (check 4), bytes intact.
  auto demoted_bytes = pull_through_peer(*in_arena);
  ASSERT_TRUE(demoted_bytes) << describe(demoted_bytes.error());
  EXPECT_EQ(sum_of(demoted_bytes->data(), demoted_bytes->size()),
            sum_of(arena_bytes.data(), arena_bytes.size()));
  EXPECT_EQ(decisions(transfer_path::chunked, path_reason::not_pinned), 1.0);
  EXPECT_EQ(decisions(transfer_path::rdma, path_reason::ok), 0.0);
  // The stop's sweep waits (bounded) for the region's remaining slot, then
  // unregisters it: the guard learns the memory is released.
  auto watch = guard->watch();
  client.reset();
  local->stop();
  auto how = watch.wait_deregistered(0ms);
  ASSERT_TRUE(how) << "stop() returned with the region still registered";
  EXPECT_EQ(*how, deregistered::drain_timed_out);
  auto back = guard->unregister_owned(1s);
  ASSERT_TRUE(back) << describe(back.error());
  EXPECT_EQ(sum_of(back->data(), back->size()), want_region);
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Transports, Region, ::testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });
