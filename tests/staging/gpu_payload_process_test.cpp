// GPU memory as a rendezvous payload, between processes on the fake CUDA:
// a payload staged from "device" memory on one node is read into device
// memory on another over both paths, bytes verified; the staging workers'
// queue (cancellation, its bound); a node without a driver runs and says
// why staging is off; bad staging options fail a node's start.
#include <cstdio>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/rendezvous/path_metrics.hpp"
#include "actors/staging/staging_workers.hpp"
#include "protocol/atoms.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/gpu_payloads.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "staging/fake_cuda.hpp"
#include "staging/local_stager.hpp"
#include "tests/cluster/test_support.hpp"

#include <caf/scoped_actor.hpp>

using namespace ferry;
using namespace std::chrono_literals;
using test::node_process;

namespace {

constexpr uint64_t MiB = 1ull << 20;

node_config fake_gpu_node() {
  node_config c;
  c.listen = false;
  c.test_fake_cuda = true;
  c.staging_chunk_size = 1 * MiB; // so a payload spans several chunks and a tail
  return c;
}

staging::fake_cuda& fake_of(node& n) {
  return dynamic_cast<staging::fake_cuda&>(n.stager()->api());
}

/// Device memory of `n`'s fake, `bytes` long, filled with `fill`.
staging::device_ptr device_on(node& n, size_t bytes, char fill) {
  auto& api = n.stager()->api();
  auto ctx = *api.retain_context(0);
  api.push_context(ctx);
  auto d = *api.mem_alloc(bytes);
  api.pop_context();
  api.release_context(0);
  std::memset(reinterpret_cast<void*>(d), fill, bytes);
  return d;
}

struct CudaGpuPayload : ::testing::Test {
  void start(node_config cfg = fake_gpu_node()) {
    peer = std::make_unique<node_process>(
      std::vector<std::string>{"--test-fake-cuda", "--staging-chunk-size", "262144",
                               "--metrics-port", "0"},
      std::vector<std::string>{}, FERRY_GPU_PEER);
    local = std::make_unique<node>(cfg);
    if (auto err = local->start())
      throw std::runtime_error(describe(err));
    auto hello = local->connect(peer->endpoint());
    if (!hello)
      throw std::runtime_error(describe(hello.error()));
    peer_id = hello->worker_id;
  }

  /// Asks the peer to stage `bytes` from its device memory: (handle, checksum).
  std::pair<data_handle, std::string> stage_on_peer(size_t bytes, uint64_t seed) {
    messenger_client m{*local};
    auto reply = m.call(peer_id, "test.gpu_payload", {},
                        {{"bytes", std::to_string(bytes)}, {"seed", std::to_string(seed)}},
                        30s);
    if (!reply)
      throw std::runtime_error(describe(reply.error()));
    return {*parse_data_handle(reply->hdrs["handle"]), reply->hdrs["checksum"]};
  }

  double peer_metric(const std::string& series) {
    return test::series_value(test::scrape_metrics(peer->metrics_port()), series);
  }
  double local_metric(const std::string& name) {
    return test::registry_value(local->metrics_registry(), name);
  }

  void read_into_device_and_verify(size_t n) {
    auto [h, sum] = stage_on_peer(n, 11);
    EXPECT_EQ(peer_metric("ferry_staging_bytes_total{direction=\"to_host\"}"), n);
    auto dev = device_on(*local, n + 64, '\x5a');
    auto got = gpu_payloads{*local}.get_into_device(h, 0, dev, n);
    ASSERT_TRUE(got) << describe(got.error());
    EXPECT_EQ(got->first, n);
    auto hex = checksum_text(checksum64(reinterpret_cast<const void*>(dev), n));
    EXPECT_EQ(hex, sum) << "the device bytes differ from the peer's";
    for (size_t i = 0; i < 64; ++i)
      ASSERT_EQ(reinterpret_cast<const char*>(dev)[n + i], '\x5a') << "past the payload";
    EXPECT_EQ(local_metric("ferry_staging_bytes_total"), n);
    auto released = blocking_client{*local}.release(h, got->second);
    ASSERT_TRUE(released) << describe(released.error());
    EXPECT_TRUE(released->freed);
  }

  /// Starts a copy of `bytes` of `dev` into `into` on the staging workers
  /// that waits on its event (held) until release_held(); returns once it
  /// runs.
  void start_held_copy(staging::device_ptr dev, std::vector<char>& into) {
    fake_of(*local).hold_events(true);
    held = std::thread{[this, dev, &into] {
      staging::copy_job j;
      j.device = dev;
      j.host = into.data();
      j.bytes = into.size();
      held_result = gpu_payloads{*local}.copy(0, j, nullptr);
    }};
    ASSERT_TRUE(test::eventually([&] { return fake_of(*local).calls("event_query") > 0; }));
  }
  void release_held() {
    fake_of(*local).hold_events(false);
    held.join();
  }

  void TearDown() override {
    if (held.joinable())
      release_held();
    local.reset();
    peer.reset();
  }

  std::unique_ptr<node_process> peer;
  std::unique_ptr<node> local;
  uint64_t peer_id = 0;
  std::thread held;
  caf::expected<uint64_t> held_result{uint64_t{0}};
};

TEST_F(CudaGpuPayload, ADevicePayloadFromOneNodeLandsInDeviceMemoryOnAnotherByRdma) {
  start();
  read_into_device_and_verify(3 * MiB + 5);
  EXPECT_EQ(local->paths().value(transfer_path::rdma, path_reason::ok), 1);
  EXPECT_EQ(local_metric("ferry_staging_chunk_allocations_total"), 1); // one chunk walked it all
}

TEST_F(CudaGpuPayload, ADevicePayloadFromOneNodeLandsInDeviceMemoryOnAnotherByChunks) {
  auto cfg = fake_gpu_node();
  cfg.ucx = false; // the chunked path
  start(cfg);
  read_into_device_and_verify(3 * MiB + 5);
  EXPECT_EQ(local->paths().value(transfer_path::rdma, path_reason::ok), 0);
  EXPECT_GE(local_metric("ferry_rendezvous_chunks_pulled_total"), 7);
}

TEST_F(CudaGpuPayload, APayloadLargerThanTheDeviceRangeIsRefusedBeforeItIsFetched) {
  start();
  auto [h, sum] = stage_on_peer(2 * MiB, 3);
  auto dev = device_on(*local, 2 * MiB, 0);
  auto got = gpu_payloads{*local}.get_into_device(h, 0, dev, 2 * MiB - 1);
  ASSERT_FALSE(got);
  EXPECT_TRUE(is(got.error(), errc::payload_too_large));
  EXPECT_NE(describe(got.error()).find(std::to_string(2 * MiB)), std::string::npos);
  EXPECT_EQ(local_metric("ferry_staging_bytes_total"), 0);
  EXPECT_EQ(local_metric("ferry_rendezvous_bytes_pulled_total"), 0);
}

TEST_F(CudaGpuPayload, AQueuedCopyCancelledBeforeItStartsCopiesNothing) {
  auto cfg = fake_gpu_node();
  cfg.staging_workers = 1;
  start(cfg);
  auto dev = device_on(*local, MiB, 'a');
  std::vector<char> first(MiB), second(MiB, 'z');
  start_held_copy(dev, first);
  gpu_copy_request req;
  req.job.device = dev;
  req.job.host = second.data();
  req.job.bytes = MiB;
  auto ticket = req.ticket;
  caf::scoped_actor self{local->system()};
  auto pending = self->request(local->staging_workers(), 20s, gpu_copy_atom::value, req);
  EXPECT_TRUE(ticket->cancel()); // still in line behind the first
  release_held();
  ASSERT_TRUE(held_result) << describe(held_result.error());
  EXPECT_EQ(first[MiB - 1], 'a');
  caf::error second_err;
  pending.receive([](uint64_t) {}, [&](caf::error& e) { second_err = std::move(e); });
  EXPECT_TRUE(is(second_err, errc::cancelled)) << describe(second_err);
  EXPECT_EQ(second[0], 'z');
  EXPECT_EQ(local_metric("ferry_staging_bytes_total"), MiB);
  EXPECT_EQ(local_metric("ferry_staging_copies_total"), 2); // one ok, one cancelled
}

TEST_F(CudaGpuPayload, OneCopyMoreThanTheQueueHoldsIsRefusedAtOnce) {
  auto cfg = fake_gpu_node();
  cfg.staging_workers = 1;
  cfg.staging_max_queued = 1;
  start(cfg);
  auto dev = device_on(*local, MiB, 'b');
  std::vector<char> first(MiB), second(MiB);
  start_held_copy(dev, first);
  staging::copy_job j;
  j.device = dev;
  j.host = second.data();
  j.bytes = MiB;
  auto refused = gpu_payloads{*local}.copy(0, j, nullptr);
  release_held();
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::resource_exhausted));
  EXPECT_TRUE(held_result);
}

TEST(CudaNode, ANodeWithoutADriverRunsAndSaysWhyStagingIsOff) {
  node_process plain{{"--metrics-port", "0"}};
  auto metrics = test::scrape_metrics(plain.metrics_port());
  EXPECT_EQ(test::series_value(metrics, "ferry_staging_available"), 0);
  node_config cfg;
  cfg.listen = false;
  node local{cfg};
  ASSERT_FALSE(local.start());
  auto hello = local.connect(plain.endpoint());
  ASSERT_TRUE(hello);
  auto text = blocking_client{local}.stat(caf::actor_cast<gateway_actor>(hello->gateway));
  ASSERT_TRUE(text) << describe(text.error());
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["staging"]["available"], false);
  EXPECT_NE(j["staging"]["unavailable_reason"].get<std::string>().find("libcuda"),
            std::string::npos);
  // This node has no driver either: a GPU copy is a clear error, not a crash.
  auto h = gpu_payloads{local}.register_device(0, 0x1000, 64);
  ASSERT_FALSE(h);
  EXPECT_TRUE(is(h.error(), errc::staging_unavailable)) << describe(h.error());
}

TEST(CudaNode, BadStagingOptionsFailTheStartNamingTheOption) {
  auto start_error = [](node_config cfg) {
    cfg.listen = false;
    node n{cfg};
    return describe(n.start());
  };
  node_config count;
  count.staging_chunk_count = 5000;
  EXPECT_NE(start_error(count).find("--staging-chunk-count"), std::string::npos);
  node_config product;
  product.staging_chunk_size = 64 * MiB;
  product.staging_chunk_count = 32;
  EXPECT_NE(start_error(product).find("1 GiB"), std::string::npos);
  node_config where;
  where.staging_location = "gpu:0";
  EXPECT_NE(start_error(where).find("--staging-location"), std::string::npos);
  node_config absent;
  absent.staging_location = "cpu:63";
  EXPECT_NE(start_error(absent).find("cpu:63"), std::string::npos);
}

} // namespace
