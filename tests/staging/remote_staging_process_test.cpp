// Remote staging between processes on the fake CUDA (label remote_staging):
// this process is the requester, ferry_gpu_peer the source. READ and WRITE,
// serial and pipelined, with the CROSS over CAF requests (the fixture's
// default, --staging-cross caf) and over one UCX GET per chunk, bytes
// verified by checksum on both sides; the CROSS's negotiation, its failed
// GETs and the series; the
// source's refusals at Pin (opted out, host memory, permission, range,
// stale epoch, full slots); frames out of scope; a lost final receipt (the
// source frozen); a requester process killed mid-session; a requester shard
// lost and replaced; failures and the
// deadline leave nothing leaked (the stats and the fake's live objects
// return to where they were).
#include <algorithm>
#include <csignal>
#include <cstring>
#include <functional>
#include <limits>
#include <string_view>
#include <thread>

#include <caf/scoped_actor.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/staging/remote_stager.hpp"
#include "actors/staging/remote_staging_stats.hpp"
#include "protocol/atoms.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "runtime/remote_staging.hpp"
#include "runtime/transfer_batch.hpp"
#include "staging/fake_cuda.hpp"
#include "staging/local_stager.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using nlohmann::json;
using test::node_process;

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

std::string hex_checksum(const void* p, size_t n) {
  return checksum_text(checksum64(p, n));
}

struct RemoteStaging : ::testing::Test {
  /// The source peer (remote staging on unless `opt_out`) and this node,
  /// each with `depth` and 256 KiB chunks here, 128 KiB there (the chunk
  /// size is negotiated down).
  void start(uint32_t depth = 1, std::vector<std::string> peer_args = {},
             bool opt_out = false, uint64_t transfer_timeout_ms = 60000) {
    std::vector<std::string> args{"--test-fake-cuda", "--staging-chunk-size", "131072",
                                  "--staging-pipeline-depth", std::to_string(depth),
                                  "--remote-staging", opt_out ? "false" : "true",
                                  "--staging-cross", peer_cross.empty() ? cross : peer_cross,
                                  "--metrics-port", "0"};
    args.insert(args.end(), peer_args.begin(), peer_args.end());
    peer = std::make_unique<node_process>(args, std::vector<std::string>{}, FERRY_GPU_PEER);
    node_config c;
    c.listen = false;
    c.test_fake_cuda = true;
    c.staging_chunk_size = 256 * KiB;
    c.staging_pipeline_depth = depth;
    c.transfer_timeout_ms = transfer_timeout_ms;
    c.staging_cross = cross;
    c.test_fail_gets = local_fails_gets;
    c.remote_staging = local_source;
    c.remote_staging_shards = local_shards;
    c.request_timeout_ms = local_request_timeout_ms;
    c.test_get_delay_ms = local_get_delay_ms;
    c.rdma_emulated_gets = local_emulated_gets;
    local = std::make_unique<node>(c);
    if (auto err = local->start())
      throw std::runtime_error(describe(err));
    auto hello = local->connect(peer->endpoint());
    if (!hello)
      throw std::runtime_error(describe(hello.error()));
    peer_id = hello->worker_id;
  }

  caf::expected<messenger::envelope> ask_peer(const std::string& handler,
                                              std::map<std::string, std::string> hdrs) {
    messenger_client m{*local};
    return m.call(peer_id, handler, {}, std::move(hdrs), 30s);
  }

  /// The parameters of a requester front of a test's own: one shard on
  /// this node's stager and loans, stats of its own.
  remote_stager_params one_shard() {
    remote_stager_params rp;
    rp.stager = local->stager();
    rp.stats = std::make_shared<remote_staging_stats>();
    rp.shards = 1;
    rp.exposures = local->device_exposures();
    return rp;
  }

  /// The peer's staging source (its front), as the gateway names it.
  caf::actor peer_source() {
    caf::scoped_actor self{local->system()};
    caf::actor source;
    self->request(local->gateway(), 10s, staging_source_atom::value, peer_id)
      .receive([&](caf::actor& a) { source = a; },
               [&](caf::error& e) { ADD_FAILURE() << describe(e); });
    return source;
  }

  /// A READ of `bytes` of `range` into `dst` here, for a stager front.
  static remote_stage_request read_request(const remote_device_range& range,
                                           staging::device_ptr dst, uint64_t bytes,
                                           caf::actor source,
                                           std::chrono::seconds deadline) {
    remote_stage_request r;
    r.range = range;
    r.length = bytes;
    r.local = dst;
    r.source = std::move(source);
    r.deadline = std::chrono::steady_clock::now() + deadline;
    return r;
  }

  /// Exposes `bytes` of pattern `seed` on the peer: (range, checksum).
  std::pair<remote_device_range, std::string> expose(uint64_t bytes, uint64_t seed,
                                                     const std::string& access = "read_write",
                                                     const std::string& kind = "device") {
    auto r = ask_peer("test.expose", {{"bytes", std::to_string(bytes)},
                                      {"seed", std::to_string(seed)},
                                      {"access", access},
                                      {"kind", kind}});
    if (!r)
      throw std::runtime_error(describe(r.error()));
    return {*parse_remote_device_range(r->hdrs["range"]), r->hdrs["checksum"]};
  }

  std::string peer_checksum(const remote_device_range& r) {
    auto a = ask_peer("test.checksum", {{"range", to_string(r)}});
    return a ? a->hdrs["checksum"] : describe(a.error());
  }

  json peer_stat() {
    auto a = ask_peer("test.staging_stat", {});
    return a ? json::parse(a->hdrs["stat"]) : json::object();
  }

  /// Device memory here, `bytes` long, filled with `fill` or a pattern.
  staging::device_ptr device_here(size_t bytes, char fill) {
    auto& api = local->stager()->api();
    auto ctx = *api.retain_context(0);
    api.push_context(ctx);
    auto d = *api.mem_alloc(bytes);
    api.pop_context();
    api.release_context(0);
    std::memset(reinterpret_cast<void*>(d), fill, bytes);
    return d;
  }
  staging::device_ptr pattern_here(size_t bytes, uint64_t seed) {
    auto d = device_here(bytes, 0);
    auto p = test::payload(bytes, seed);
    std::memcpy(reinterpret_cast<void*>(d), p.data(), bytes);
    return d;
  }
  static std::string checksum_at(staging::device_ptr d, size_t n) {
    return hex_checksum(reinterpret_cast<const void*>(d), n);
  }

  /// The peer is back at rest: no session, no loan, no chunk lent, and
  /// no registered region but `regions` (its staged payloads').
  void expect_peer_at_rest(double regions = 0) {
    json s;
    EXPECT_TRUE(test::eventually([&] {
      s = peer_stat();
      return s["source"].value("active", -1) == 0 && s.value("loans", -1) == 0
             && s["chunks"].value("active", -1) == 0;
    }, 20s)) << s.dump();
    EXPECT_EQ(s["chunks"].value("retained", -1), 0) << s.dump();
    // The UCX CROSS's private registrations are gone.
    EXPECT_TRUE(test::eventually([&] {
      return test::series_value(test::scrape_metrics(peer->metrics_port()),
                                "ferry_rdma_live_regions")
             == regions;
    }));
  }
  double peer_regions() {
    return test::series_value(test::scrape_metrics(peer->metrics_port()),
                              "ferry_rdma_live_regions");
  }
  /// This node is back at rest, with no registered region but `regions`
  /// (a get's warm destination).
  void expect_local_at_rest(double regions = 0) {
    // (A staging worker's chunk goes back just after its copy's answer.)
    EXPECT_TRUE(test::eventually([&] { return local->stager()->stats().active == 0; }));
    auto st = local->stager()->stats();
    EXPECT_EQ(st.active, 0u);
    EXPECT_EQ(st.retained, 0u);
    EXPECT_EQ(local->remote_staging()->active.load(), 0);
    EXPECT_EQ(local->remote_staging()->queued.load(), 0);
    EXPECT_EQ(test::registry_value(local->metrics_registry(), "ferry_rdma_live_regions"),
              regions);
  }

  /// Which way the chunks crossed: every session over UCX (every byte
  /// read GOT here, every byte written GOT there) or none.
  void expect_crossed() {
    bool ucx = cross == "auto" && peer_cross != "caf" && !tcp_pair;
    auto s = peer_stat();
    auto& mine = *local->remote_staging();
    EXPECT_EQ(mine.ucx_sessions.load(), ucx ? mine.completed.load() : 0);
    EXPECT_EQ(mine.ucx_bytes.load(), ucx ? mine.bytes_read.load() : 0);
    EXPECT_EQ(s["source"].value("ucx_sessions", -1), ucx ? s["source"].value("pins", -1) : 0);
    EXPECT_EQ(s["source"].value("ucx_bytes", uint64_t{1}), ucx ? mine.bytes_written.load() : 0);
  }

  void read_and_verify(uint64_t bytes, uint64_t offset = 0) {
    auto [range, sum] = expose(bytes + offset, 21);
    auto dst = device_here(bytes + 64, '\x5a');
    auto out = remote_staging{*local}.read(range, offset, 0, dst, bytes);
    ASSERT_FALSE(out.error) << describe(out.error);
    EXPECT_EQ(out.completed, bytes);
    auto expected = test::payload(bytes + offset, 21);
    EXPECT_EQ(checksum_at(dst, bytes), hex_checksum(expected.data() + offset, bytes));
    for (size_t i = 0; i < 64; ++i)
      ASSERT_EQ(reinterpret_cast<const char*>(dst)[bytes + i], '\x5a') << "past the range";
    EXPECT_EQ(local->remote_staging()->bytes_read.load(), bytes);
    expect_crossed();
    expect_peer_at_rest();
    expect_local_at_rest();
  }

  void write_and_verify(uint64_t bytes) {
    auto [range, before] = expose(bytes, 22);
    auto src = pattern_here(bytes, 23);
    auto out = remote_staging{*local}.write(range, 0, 0, src, bytes);
    ASSERT_FALSE(out.error) << describe(out.error);
    EXPECT_EQ(out.completed, bytes);
    EXPECT_NE(peer_checksum(range), before);
    EXPECT_EQ(peer_checksum(range), checksum_at(src, bytes));
    EXPECT_EQ(local->remote_staging()->bytes_written.load(), bytes);
    expect_crossed();
    expect_peer_at_rest();
    expect_local_at_rest();
  }

  void TearDown() override {
    local.reset();
    peer.reset();
  }

  std::unique_ptr<node_process> peer;
  std::unique_ptr<node> local;
  uint64_t peer_id = 0;
  std::string cross = "caf"; // --staging-cross on both sides
  std::string peer_cross;    // the source's, when not `cross`
  bool local_fails_gets = false;
  bool local_source = false; // this node accepts Pins too (self-peer sessions)
  size_t local_shards = 4;
  uint64_t local_request_timeout_ms = 10000;
  uint64_t local_get_delay_ms = 0; // this node's engine answers each GET this late
  bool local_emulated_gets = false; // --rdma-emulated-gets here (not on the source)
  bool tcp_pair = false; // both nodes on UCX over tcp alone: no GET (one_sided_reads.hpp)
};

/// Both nodes on UCX over tcp alone, as the tests below set it up.
struct RemoteStagingOverTcp : RemoteStaging {
  void SetUp() override {
    ::setenv("UCX_TLS", "tcp,self", 1);
    ::setenv("UCX_NET_DEVICES", "lo", 1);
    ::unsetenv("FERRY_RDMA_EMULATED_GETS");
    tcp_pair = true;
    cross = "auto";
  }
  void TearDown() override {
    RemoteStaging::TearDown();
    ::unsetenv("UCX_TLS");
    ::unsetenv("UCX_NET_DEVICES");
  }
};

TEST_F(RemoteStaging, AReadOfAPeersDeviceRangeRunsSerially) {
  start(1);
  read_and_verify(1 * MiB + 4321, 1000); // 128 KiB chunks, a tail, an offset
  auto s = peer_stat();
  EXPECT_EQ(s["source"].value("pins", 0), 1);
  EXPECT_EQ(s["source"].value("unpinned", 0), 1);
  EXPECT_EQ(s["source"].value("delegates", 0), 9); // ceil((1 MiB + 4321) / 128 KiB)
  EXPECT_EQ(s["source"].value("max_in_flight", 0), 1); // serial: one copy at a time
}

TEST_F(RemoteStaging, AWriteIntoAPeersDeviceRangeRunsSerially) {
  start(1);
  write_and_verify(700 * KiB + 3);
}

struct RemoteStagingPipeline
  : RemoteStaging,
    ::testing::WithParamInterface<std::tuple<bool, uint32_t, std::string>> {};

TEST_P(RemoteStagingPipeline, MovesEveryByteAtItsDepth) {
  auto [write, depth, how] = GetParam();
  cross = how;
  start(depth, {"--staging-chunk-count", "32"});
  if (write)
    write_and_verify(3 * MiB + 17);
  else
    read_and_verify(3 * MiB + 17);
  // The source really ran copies side by side: a READ prefills its whole
  // ring (R = depth here: 25 chunks of 128 KiB); a WRITE has more than one
  // Delegate out while the next chunk crosses.
  auto most = peer_stat()["source"].value("max_in_flight", 0);
  if (depth == 1)
    EXPECT_EQ(most, 1);
  else if (write)
    EXPECT_GE(most, 2) << depth;
  else
    EXPECT_EQ(most, static_cast<int>(depth));
  // The CROSS window: over CAF one piece at a time; over UCX as many
  // CROSSes as both rings allow (L = min(depth, 13 local chunks of 256 KiB),
  // R = min(depth, 25)), filled once the first Delegates or PREs confirm.
  auto window = local->remote_staging()->max_cross_window.load();
  if (how == "caf")
    EXPECT_EQ(window, 1u);
  else
    EXPECT_EQ(window, std::min<uint64_t>(depth, 13)) << depth;
}

// Both directions, serial and pipelined, over both CROSS paths (auto: one
// UCX GET per chunk between these two processes).
INSTANTIATE_TEST_SUITE_P(Depths, RemoteStagingPipeline,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(1u, 2u, 4u, 16u),
                                            ::testing::Values("caf", "auto")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "write" : "read")
                                  + "_depth" + std::to_string(std::get<1>(info.param))
                                  + (std::get<2>(info.param) == "auto" ? "_ucx" : "_caf");
                         });

TEST_F(RemoteStagingOverTcp, APairThatWouldOnlyEmulateAGetCrossesOnCaf) {
  start(2);
  read_and_verify(600 * KiB);
  write_and_verify(300 * KiB);
}

TEST_F(RemoteStagingOverTcp, ASourceThatTakesNoEmulatedGetsDeclinesTheRequestersAsk) {
  local_emulated_gets = true; // this side asks for the UCX CROSS; the source declines
  start(2);
  read_and_verify(600 * KiB);
  write_and_verify(300 * KiB);
}

TEST_F(RemoteStaging, ASourceOnCafRequestsKeepsTheCrossOnCaf) {
  cross = "auto"; // this side asks for the UCX CROSS; the source declines
  peer_cross = "caf";
  start(2);
  read_and_verify(600 * KiB);
  write_and_verify(300 * KiB);
}

TEST_F(RemoteStaging, AFailedGetFailsTheReadAndLeaksNothing) {
  cross = "auto";
  local_fails_gets = true; // this node's engine fails every GET
  start(2);
  auto [range, sum] = expose(512 * KiB, 41);
  auto dst = device_here(512 * KiB, 0);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB);
  ASSERT_TRUE(out.error);
  EXPECT_TRUE(is(out.error, errc::get_failed)) << describe(out.error);
  EXPECT_EQ(out.completed, 0u);
  EXPECT_EQ(local->remote_staging()->ucx_sessions.load(), 1u);
  EXPECT_EQ(local->remote_staging()->ucx_bytes.load(), 0u);
  expect_peer_at_rest();
  expect_local_at_rest();
  // The next one, the same way, fails the same and still leaks nothing;
  // nothing reached the device here.
  EXPECT_TRUE(remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB).error);
  EXPECT_NE(checksum_at(dst, 512 * KiB), sum);
  expect_local_at_rest();
}

TEST_F(RemoteStaging, AFailedGetOnTheSourceFailsTheWriteBeforeAnyDelegate) {
  cross = "auto";
  start(2, {"--test-fail-gets"}); // the source's engine fails every GET
  auto [range, before] = expose(512 * KiB, 42);
  auto src = pattern_here(512 * KiB, 43);
  auto out = remote_staging{*local}.write(range, 0, 0, src, 512 * KiB);
  ASSERT_TRUE(out.error);
  EXPECT_TRUE(is(out.error, errc::get_failed)) << describe(out.error);
  // Chunk 0's CROSS failed before its Delegate was sent: nothing could
  // have changed the source's range.
  EXPECT_EQ(out.effect, remote_effect::none);
  EXPECT_EQ(peer_checksum(range), before);
  EXPECT_EQ(peer_stat()["source"].value("delegates", -1), 0);
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, TheSeriesFollowTheCounters) {
  cross = "auto";
  start(1);
  read_and_verify(300 * KiB);
  write_and_verify(200 * KiB);
  auto& r = local->metrics_registry();
  EXPECT_EQ(test::registry_value(r, "ferry_remote_staging_sessions_total", "end", "completed"), 2);
  EXPECT_EQ(test::registry_value(r, "ferry_remote_staging_sessions_total", "end", "failed"), 0);
  EXPECT_EQ(test::registry_value(r, "ferry_remote_staging_bytes_total", "direction", "read"),
            300 * KiB);
  EXPECT_EQ(test::registry_value(r, "ferry_remote_staging_bytes_total", "direction", "written"),
            200 * KiB);
  EXPECT_EQ(test::registry_value(r, "ferry_remote_staging_ucx_sessions_total", "role",
                                 "requester"),
            2);
  EXPECT_EQ(test::registry_value(r, "ferry_remote_staging_active", "role", "requester"), 0);
  // The source's, scraped over HTTP.
  auto text = test::scrape_metrics(peer->metrics_port());
  EXPECT_EQ(test::series_value(text, R"(ferry_remote_staging_pins_total{result="ok"})"), 2)
    << text;
  EXPECT_EQ(test::series_value(
              text, R"(ferry_remote_staging_sessions_total{end="unpinned",role="source"})"),
            2)
    << text;
  EXPECT_EQ(test::series_value(text, R"(ferry_remote_staging_ucx_sessions_total{role="source"})"),
            2);
  EXPECT_EQ(test::series_value(text, R"(ferry_remote_staging_active{role="source"})"), 0);
}

TEST_F(RemoteStaging, ReadsAndWritesOfOneSourceRunSideBySide) {
  start(2); // two staging workers there: two session slots
  auto [a, a_sum] = expose(2 * MiB, 31, "read");
  auto [b, b_before] = expose(2 * MiB, 32, "write");
  auto dst = device_here(2 * MiB, 0);
  auto src = pattern_here(2 * MiB, 33);
  remote_stage_outcome read_out, write_out;
  std::thread reader{// (a structured binding cannot be captured in C++17: a copy)
                     [&, range = a] { read_out = remote_staging{*local}.read(range, 0, 0, dst, 2 * MiB); }};
  write_out = remote_staging{*local}.write(b, 0, 0, src, 2 * MiB);
  reader.join();
  ASSERT_FALSE(read_out.error) << describe(read_out.error);
  ASSERT_FALSE(write_out.error) << describe(write_out.error);
  EXPECT_EQ(checksum_at(dst, 2 * MiB), a_sum);
  EXPECT_EQ(peer_checksum(b), checksum_at(src, 2 * MiB));
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, ANodeStagesFromItsOwnExposedRange) {
  start(1);
  // This node is its own source (a self-peer session): it must opt in too.
  local.reset();
  node_config c;
  c.listen = false;
  c.test_fake_cuda = true;
  c.remote_staging = true;
  c.staging_chunk_size = 256 * KiB;
  local = std::make_unique<node>(c);
  ASSERT_FALSE(local->start());
  auto src = pattern_here(600 * KiB, 41);
  auto range = remote_staging{*local}.expose(0, src, 600 * KiB, staging::device_access::read);
  ASSERT_TRUE(range);
  auto dst = device_here(600 * KiB, 0);
  auto out = remote_staging{*local}.read(*range, 0, 0, dst, 600 * KiB);
  ASSERT_FALSE(out.error) << describe(out.error);
  EXPECT_EQ(checksum_at(dst, 600 * KiB), checksum_at(src, 600 * KiB));
  EXPECT_EQ(local->remote_staging()->pins.load(), 1u);
  EXPECT_TRUE(test::eventually([&] { return local->device_exposures()->loans() == 0; }));
  expect_local_at_rest();
}

TEST_F(RemoteStaging, ASourceThatOptedOutRefusesThePin) {
  start(1, {}, true);
  auto [range, sum] = expose(64 * KiB, 1);
  auto dst = device_here(64 * KiB, 0);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 64 * KiB);
  EXPECT_TRUE(is(out.error, errc::staging_unavailable)) << describe(out.error);
  EXPECT_NE(describe(out.error).find("--remote-staging"), std::string::npos);
  EXPECT_EQ(peer_stat()["source"].value("pins_refused", 0), 1);
  expect_local_at_rest();
}

TEST_F(RemoteStaging, PinRefusesHostMemoryPermissionRangeAndAStaleEpoch) {
  start(1);
  auto dst = device_here(64 * KiB, 0);
  auto chunks_before = peer_stat()["chunks"].value("allocations", -1);
  // Host memory exposed as if it were device memory.
  auto [host, h_sum] = expose(64 * KiB, 2, "read", "host");
  auto out = remote_staging{*local}.read(host, 0, 0, dst, 64 * KiB);
  EXPECT_TRUE(is(out.error, errc::invalid_argument)) << describe(out.error);
  EXPECT_NE(describe(out.error).find("not CUDA device memory"), std::string::npos);
  // A read-only range refuses a WRITE (nothing was sent that could change it).
  auto [ro, ro_sum] = expose(64 * KiB, 3, "read");
  out = remote_staging{*local}.write(ro, 0, 0, dst, 64 * KiB);
  EXPECT_TRUE(is(out.error, errc::invalid_argument)) << describe(out.error);
  EXPECT_EQ(out.effect, remote_effect::none);
  EXPECT_EQ(peer_checksum(ro), ro_sum);
  // A range that claims more bytes than the source exposed.
  auto longer = ro;
  longer.bytes = 128 * KiB;
  out = remote_staging{*local}.read(longer, 64 * KiB, 0, dst, 64 * KiB);
  EXPECT_TRUE(is(out.error, errc::invalid_argument)) << describe(out.error);
  // A range from another incarnation of the source.
  auto stale = ro;
  stale.epoch += 1;
  out = remote_staging{*local}.read(stale, 0, 0, dst, 64 * KiB);
  EXPECT_TRUE(is(out.error, errc::invalid_argument)) << describe(out.error);
  auto s = peer_stat();
  EXPECT_EQ(s["source"].value("pins_refused", 0), 4) << s.dump();
  EXPECT_EQ(s["source"].value("pins", -1), 0);
  // Refused before any staging memory was taken for them.
  EXPECT_EQ(s["chunks"].value("allocations", -1), chunks_before);
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, FramesOutOfScopeOrOrderAreRefused) {
  start(1);
  auto [range, sum] = expose(512 * KiB, 4);
  caf::scoped_actor self{local->system()};
  auto source = peer_source();
  ASSERT_TRUE(source);
  stage_pin pin;
  pin.nonce = 99;
  pin.registration = range.registration;
  pin.epoch = range.epoch;
  pin.length = 512 * KiB;
  pin.chunk_size = 128 * KiB;
  pin.depth = 1;
  pin.budget_ms = 20000;
  stage_pin_reply reply;
  self->request(source, 10s, stage_pin_atom::value, pin)
    .receive([&](stage_pin_reply& r) { reply = r; },
             [&](caf::error& e) { FAIL() << describe(e); });
  ASSERT_TRUE(reply.session);
  EXPECT_EQ(reply.chunk_size, 128 * KiB);
  EXPECT_EQ(reply.ring, 1u);
  // Pins with fields out of bounds are refused before any session starts.
  for (auto bad : {std::make_pair(uint64_t{1}, uint32_t{1}),   // a 1-byte chunk
                   std::make_pair(uint64_t{128 * KiB}, uint32_t{17}), // depth 17
                   std::make_pair(uint64_t{128 * KiB}, uint32_t{0})}) {
    auto p = pin;
    p.nonce = 100;
    p.chunk_size = bad.first;
    p.depth = bad.second;
    caf::error got;
    self->request(source, 10s, stage_pin_atom::value, p)
      .receive([&](stage_pin_reply&) {}, [&](caf::error& e) { got = e; });
    EXPECT_TRUE(is(got, errc::protocol_violation)) << describe(got);
  }
  auto expect_refused = [&](auto atom, stage_frame f) {
    caf::error got;
    self->request(reply.session, 10s, atom, f)
      .receive([&](stage_frame&) {}, [&](caf::error& e) { got = e; });
    EXPECT_TRUE(is(got, errc::protocol_violation)) << describe(got);
  };
  stage_frame f;
  f.nonce = 98; // another session's
  f.registration = range.registration;
  f.phase = static_cast<uint8_t>(stage_phase::delegate);
  f.length = 128 * KiB;
  expect_refused(stage_delegate_atom::value, f);
  f.nonce = 99;
  f.chunk = 1; // out of order
  f.offset = 128 * KiB;
  expect_refused(stage_delegate_atom::value, f);
  f.chunk = 0;
  f.offset = 0;
  expect_refused(stage_finish_atom::value, f); // wrong phase
  f.phase = static_cast<uint8_t>(stage_phase::cross);
  expect_refused(stage_finish_atom::value, f); // nothing crossed
  stage_frame unpin;
  unpin.nonce = 99;
  unpin.registration = range.registration;
  unpin.phase = static_cast<uint8_t>(stage_phase::unpin);
  unpin.length = 512 * KiB;
  caf::error unpinned;
  self->request(reply.session, 10s, stage_unpin_atom::value, unpin)
    .receive([&](stage_frame& echo) { EXPECT_EQ(echo, unpin); },
             [&](caf::error& e) { unpinned = e; });
  EXPECT_FALSE(unpinned) << describe(unpinned);
  auto s = peer_stat();
  EXPECT_EQ(s["source"].value("delegates", -1), 0); // no copy ran for a bad frame
  expect_peer_at_rest();
}

TEST_F(RemoteStaging, AFullSetOfSourceSlotsRefusesThePinBeforeAllocating) {
  start(1, {"--staging-workers", "1"}); // one session slot there
  auto [a, a_sum] = expose(256 * KiB, 5);
  auto [b, b_sum] = expose(256 * KiB, 6);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}}));
  auto dst_a = device_here(256 * KiB, 0);
  auto dst_b = device_here(256 * KiB, 0);
  remote_stage_outcome first;
  std::thread held{
      [&, range = a] { first = remote_staging{*local}.read(range, 0, 0, dst_a, 256 * KiB); }};
  ASSERT_TRUE(test::eventually([&] { return peer_stat()["source"].value("active", 0) == 1; }));
  auto allocations = peer_stat()["chunks"].value("allocations", -1);
  auto second = remote_staging{*local}.read(b, 0, 0, dst_b, 256 * KiB);
  EXPECT_TRUE(is(second.error, errc::resource_exhausted)) << describe(second.error);
  EXPECT_EQ(peer_stat()["chunks"].value("allocations", -2), allocations);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "0"}}));
  held.join();
  ASSERT_FALSE(first.error) << describe(first.error);
  EXPECT_EQ(checksum_at(dst_a, 256 * KiB), a_sum);
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, ACudaFailureOnTheSourceFailsTheReadAndLeaksNothing) {
  start(2, {"--staging-chunk-count", "8"});
  auto [range, sum] = expose(1 * MiB, 7);
  auto dst = device_here(1 * MiB, 0);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 1 * MiB); // the pool warms up
  ASSERT_FALSE(out.error) << describe(out.error);
  auto live_before = peer_stat()["live"]; // the idle chunks' streams, events, mappings
  ASSERT_TRUE(ask_peer("test.fail_cuda", {{"call", "copy_to_host"}, {"times", "1"}}));
  out = remote_staging{*local}.read(range, 0, 0, dst, 1 * MiB);
  EXPECT_TRUE(is(out.error, errc::cuda_error)) << describe(out.error);
  EXPECT_EQ(out.completed, 0u);
  EXPECT_EQ(local->remote_staging()->failed.load(), 1u);
  expect_peer_at_rest();
  expect_local_at_rest();
  std::memset(reinterpret_cast<void*>(dst), 0, 1 * MiB);
  // The failed copy never ran: its chunk went back clean; the next read works.
  out = remote_staging{*local}.read(range, 0, 0, dst, 1 * MiB);
  ASSERT_FALSE(out.error) << describe(out.error);
  EXPECT_EQ(checksum_at(dst, 1 * MiB), sum);
  EXPECT_EQ(peer_stat()["live"], live_before); // no stream, event or mapping more
}

TEST_F(RemoteStaging, AFailedWriteAfterItsDelegateReportsTheRemoteEffectUnknown) {
  start(1);
  auto [range, before] = expose(512 * KiB, 8);
  ASSERT_TRUE(ask_peer("test.fail_cuda", {{"call", "copy_to_device"}, {"times", "1"}}));
  auto src = pattern_here(512 * KiB, 9);
  auto out = remote_staging{*local}.write(range, 0, 0, src, 512 * KiB);
  EXPECT_TRUE(is(out.error, errc::cuda_error)) << describe(out.error);
  EXPECT_EQ(out.effect, remote_effect::unknown);
  EXPECT_EQ(out.completed, 0u);
  EXPECT_EQ(local->remote_staging()->effect_unknown.load(), 1u);
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, ALocalCudaFailureFailsTheReadAndLeaksNothing) {
  start(1);
  auto [range, sum] = expose(512 * KiB, 10);
  auto dst = device_here(512 * KiB, 0);
  dynamic_cast<staging::fake_cuda&>(local->stager()->api()).fail("copy_to_device", 1);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB);
  EXPECT_TRUE(is(out.error, errc::cuda_error)) << describe(out.error);
  EXPECT_EQ(out.completed, 0u);
  expect_peer_at_rest();
  expect_local_at_rest(); // the failed POST queued nothing: its chunk went back clean
  out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB);
  ASSERT_FALSE(out.error) << describe(out.error);
  EXPECT_EQ(checksum_at(dst, 512 * KiB), sum);
}

TEST_F(RemoteStaging, ACopyWhoseEventFailsToRecordKeepsItsChunkRetained) {
  start(1);
  auto [range, sum] = expose(512 * KiB, 12);
  auto dst = device_here(512 * KiB, 0);
  ASSERT_TRUE(ask_peer("test.fail_cuda", {{"call", "event_record"}, {"times", "1"}}));
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB);
  EXPECT_TRUE(is(out.error, errc::cuda_error)) << describe(out.error);
  // The source's copy was queued with no event to confirm it: its chunk is
  // never reused, and its loan and slot stay charged (an unconfirmed drain).
  json s;
  ASSERT_TRUE(test::eventually([&] {
    s = peer_stat();
    return s["chunks"].value("retained", 0) == 1;
  })) << s.dump();
  EXPECT_EQ(s["source"].value("retained_chunks", 0), 1);
  EXPECT_EQ(s["source"].value("active", 0), 1);
  EXPECT_EQ(s.value("loans", 0), 1);
}

TEST_F(RemoteStaging, ADeadlineThatPassesMidSessionEndsItOnBothSides) {
  start(1, {}, false, 1500); // this node's transfers end after 1.5 s
  auto [range, sum] = expose(512 * KiB, 11);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}})); // the source's copies hang
  auto dst = device_here(512 * KiB, 0);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB);
  EXPECT_TRUE(is(out.error, errc::timeout)) << describe(out.error);
  EXPECT_NE(describe(out.error).find("deadline"), std::string::npos) << describe(out.error);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "0"}}));
  expect_peer_at_rest(); // the session drained its copy and gave everything back
  expect_local_at_rest();
}

TEST_F(RemoteStaging, ASessionTakesWhicheverShardIsFree) {
  local_shards = 2;
  local_source = true;
  start(1);
  auto [held_range, held_sum] = expose(256 * KiB, 51);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}}));
  auto held_dst = device_here(256 * KiB, 0);
  remote_stage_outcome held;
  std::thread a{[&, range = held_range] {
    held = remote_staging{*local}.read(range, 0, 0, held_dst, 256 * KiB);
  }};
  ASSERT_TRUE(test::eventually([&] { return peer_stat()["source"].value("active", 0) == 1; }));
  // One shard is held by that session. Sessions with this node as their
  // own source run one after another on the other shard: none waits
  // behind the held one (a round-robin pool would hand the second to it).
  auto src = pattern_here(256 * KiB, 52);
  auto mine = remote_staging{*local}.expose(0, src, 256 * KiB, staging::device_access::read);
  ASSERT_TRUE(mine);
  for (int i = 0; i < 3; ++i) {
    auto dst = device_here(256 * KiB, 0);
    auto out = remote_staging{*local}.read(*mine, 0, 0, dst, 256 * KiB);
    ASSERT_FALSE(out.error) << i << ": " << describe(out.error);
    EXPECT_EQ(checksum_at(dst, 256 * KiB), checksum_at(src, 256 * KiB));
  }
  EXPECT_EQ(local->remote_staging()->completed.load(), 3u);
  EXPECT_EQ(local->remote_staging()->active.load(), 1); // still the held one
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "0"}}));
  a.join();
  ASSERT_FALSE(held.error) << describe(held.error);
  EXPECT_EQ(checksum_at(held_dst, 256 * KiB), held_sum);
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, AFullLineRefusesOneMoreAndACancelledWaitingSessionNeverPins) {
  local_shards = 1;
  start(1);
  auto exposed = expose(256 * KiB, 61); // (the lambda below captures the range)
  auto range = exposed.first;
  auto sum = exposed.second;
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}}));
  caf::scoped_actor self{local->system()};
  auto source = peer_source();
  auto dst = device_here(256 * KiB, 0);
  auto request = [&] { return read_request(range, dst, 256 * KiB, source, 60s); };
  // 64 sessions: the first runs (held on the source), 63 wait.
  std::vector<std::shared_ptr<gpu_copy_ticket>> tickets;
  for (int i = 0; i < 64; ++i) {
    auto r = request();
    tickets.push_back(r.ticket);
    self->send(local->remote_stagers(), remote_stage_atom::value, std::move(r));
  }
  ASSERT_TRUE(test::eventually([&] {
    return peer_stat()["source"].value("active", 0) == 1
           && local->remote_staging()->queued.load() == 63;
  }));
  // One more is refused at once (the only answer that can come now).
  self->send(local->remote_stagers(), remote_stage_atom::value, request());
  self->receive([&](remote_stage_outcome& o) {
    EXPECT_TRUE(is(o.error, errc::resource_exhausted)) << describe(o.error);
  },
                caf::after(10s) >> [] { FAIL() << "no answer to the 65th session"; });
  EXPECT_EQ(local->remote_staging()->refused.load(), 1u);
  // The waiting ones are cancelled; the held one then finishes, and each
  // waiting one answers cancelled without a Pin.
  for (size_t i = 1; i < tickets.size(); ++i)
    EXPECT_TRUE(tickets[i]->cancel());
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "0"}}));
  int ok = 0, cancelled = 0, other = 0;
  for (int i = 0; i < 64; ++i)
    self->receive(
      [&](remote_stage_outcome& o) {
        if (!o.error)
          ++ok;
        else if (is(o.error, errc::cancelled))
          ++cancelled;
        else
          ++other;
      },
      caf::after(30s) >> [&] { ++other; });
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(cancelled, 63);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(checksum_at(dst, 256 * KiB), sum);
  EXPECT_EQ(local->remote_staging()->cancelled.load(), 63u);
  EXPECT_EQ(peer_stat()["source"].value("pins", -1), 1); // the cancelled never pinned
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, ANodeStopEndsTheRunningSessionAtOnceAndCancelsTheWaitingOne) {
  local_shards = 1;
  // A minute's deadline: the running session can only end early by the
  // stop. (Its Unpin waits for the source's drain of the hung copy: one
  // short request timeout bounds that wait.)
  local_request_timeout_ms = 1000;
  start(1, {}, false, 60000);
  auto [range, sum] = expose(256 * KiB, 71);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}})); // the running one hangs
  auto dst_a = device_here(256 * KiB, 0);
  auto dst_b = device_here(256 * KiB, 0);
  remote_stage_outcome first, second;
  std::thread a{[&, r = range] { first = remote_staging{*local}.read(r, 0, 0, dst_a, 256 * KiB); }};
  bool pinned = test::eventually([&] { return peer_stat()["source"].value("active", 0) == 1; });
  std::thread b{[&, r = range] { second = remote_staging{*local}.read(r, 0, 0, dst_b, 256 * KiB); }};
  bool waiting = test::eventually([&] { return local->remote_staging()->queued.load() == 1; });
  auto stats = local->remote_staging();
  local->stop();
  a.join();
  b.join();
  ASSERT_TRUE(pinned);
  ASSERT_TRUE(waiting);
  // The stop returned once no session ran: the running one ended by the
  // stop (draining), not by its deadline; the waiting one never started.
  EXPECT_EQ(stats->active.load(), 0);
  EXPECT_EQ(stats->cancelled.load(), 1u);
  EXPECT_TRUE(is(first.error, errc::draining)) << describe(first.error);
  EXPECT_TRUE(is(second.error, errc::cancelled)) << describe(second.error);
  EXPECT_EQ(stats->failed.load(), 1u);
  // The source is left draining its hung copy (this node can no longer
  // reach it to release the fake's events): it is killed, not stopped.
  peer->kill(SIGKILL);
}

TEST_F(RemoteStaging, ASessionIntoLocalBytesAnotherSessionHoldsIsRefusedBeforeItsPin) {
  start(1);
  auto [a, a_sum] = expose(256 * KiB, 81);
  auto [b, b_sum] = expose(256 * KiB, 82);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}}));
  auto dst = device_here(512 * KiB, 0);
  remote_stage_outcome first;
  std::thread held{[&, r = a] { first = remote_staging{*local}.read(r, 0, 0, dst, 256 * KiB); }};
  ASSERT_TRUE(test::eventually([&] { return peer_stat()["source"].value("active", 0) == 1; }));
  // Overlapping the held session's local bytes: refused here, no Pin.
  auto overlapping = remote_staging{*local}.read(b, 0, 0, dst + 128 * KiB, 256 * KiB);
  EXPECT_TRUE(is(overlapping.error, errc::resource_exhausted)) << describe(overlapping.error);
  EXPECT_EQ(peer_stat()["source"].value("pins", -1), 1);
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "0"}}));
  held.join();
  ASSERT_FALSE(first.error) << describe(first.error);
  // Next to it, once it ended, the same bytes are free again.
  auto after = remote_staging{*local}.read(b, 0, 0, dst + 128 * KiB, 256 * KiB);
  ASSERT_FALSE(after.error) << describe(after.error);
  EXPECT_EQ(checksum_at(dst + 128 * KiB, 256 * KiB), b_sum);
  EXPECT_EQ(local->device_exposures()->loans(), 0u);
  expect_peer_at_rest();
  expect_local_at_rest();
}

TEST_F(RemoteStaging, AReadGetGivenUpByItsBoundGivesTheLoansBackAndItsChunkOnceTheGetEnds) {
  cross = "auto";
  local_request_timeout_ms = 1000; // each GET's bound here
  local_get_delay_ms = 2500;       // this engine answers each GET later still
  start(1);
  auto [range, sum] = expose(256 * KiB, 91);
  auto dst = device_here(256 * KiB, 0);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 256 * KiB);
  ASSERT_TRUE(out.error);
  EXPECT_TRUE(is(out.error, errc::get_abandoned)) << describe(out.error);
  EXPECT_EQ(out.completed, 0u);
  // The GET holds the host slot only: the loan on the local range is back
  // at once, and so is the source's side (Unpin went).
  EXPECT_EQ(local->device_exposures()->loans(), 0u);
  expect_peer_at_rest();
  // The slot's chunk comes back once the engine lets the GET go, and is not
  // retained for good.
  EXPECT_TRUE(test::eventually([&] { return local->stager()->stats().active == 0; }, 20s));
  expect_local_at_rest();
}

TEST_F(RemoteStaging, AWriteGetGivenUpOnTheSourceGivesItsSlotBackAndItsChunkOnceTheGetEnds) {
  cross = "auto";
  // The source's GET is bounded by half its request timeout (500 ms); its
  // engine answers each GET after 1.5 s.
  start(1, {"--request-timeout-ms", "1000", "--test-get-delay-ms", "1500"});
  auto [range, before] = expose(256 * KiB, 92);
  auto src = pattern_here(256 * KiB, 93);
  auto out = remote_staging{*local}.write(range, 0, 0, src, 256 * KiB);
  ASSERT_TRUE(out.error);
  EXPECT_TRUE(is(out.error, errc::get_abandoned)) << describe(out.error);
  EXPECT_EQ(out.effect, remote_effect::none); // no Delegate went
  EXPECT_EQ(peer_checksum(range), before);
  // The source's loan and session slot are back, and its chunk once the
  // GET ended (not retained for good).
  expect_peer_at_rest();
  expect_local_at_rest();
  EXPECT_EQ(peer_stat()["source"].value("retained_chunks", -1), 0);
}

TEST_F(RemoteStaging, TheSourceGetsOnlyFromTheWorkerOfTheRequestersOwnNodeAndOnlyByGet) {
  cross = "auto";
  start(1);
  auto range = expose(256 * KiB, 94).first; // (the lambda below captures it)
  caf::scoped_actor self{local->system()};
  auto source = peer_source();
  ASSERT_TRUE(source);
  // A WRITE's Pin asks for the CROSS over UCX, naming a worker: this
  // node's (the source GETs from it) or any other (it never does).
  auto pin_naming = [&](uint64_t worker, uint64_t nonce,
                        std::function<void(const stage_pin_reply&)> before_unpin = {}) {
    stage_pin pin;
    pin.nonce = nonce;
    pin.registration = range.registration;
    pin.epoch = range.epoch;
    pin.length = 256 * KiB;
    pin.direction = static_cast<uint8_t>(stage_direction::write);
    pin.chunk_size = 128 * KiB;
    pin.depth = 1;
    pin.budget_ms = 20000;
    pin.cross = static_cast<uint8_t>(stage_cross_mode::ucx_get);
    pin.requester_worker = worker;
    stage_pin_reply reply;
    self->request(source, 10s, stage_pin_atom::value, pin)
      .receive([&](stage_pin_reply& r) { reply = r; },
               [&](caf::error& e) { ADD_FAILURE() << describe(e); });
    if (reply.session && before_unpin)
      before_unpin(reply);
    if (reply.session) { // Unpin: the source's range is free for the next
      stage_frame unpin;
      unpin.nonce = nonce;
      unpin.registration = range.registration;
      unpin.phase = static_cast<uint8_t>(stage_phase::unpin);
      unpin.length = 256 * KiB;
      self->request(reply.session, 10s, stage_unpin_atom::value, unpin)
        .receive([](stage_frame&) {}, [&](caf::error& e) { ADD_FAILURE() << describe(e); });
    }
    return reply;
  };
  auto stranger = pin_naming(local->worker_id() ^ 0x5a5a, 201);
  EXPECT_TRUE(stranger.session);
  EXPECT_EQ(stranger.cross, static_cast<uint8_t>(stage_cross_mode::caf));
  // In a session that crosses by GET, bytes sent over CAF are refused:
  // they could land in a slot a GET is writing.
  auto by_caf_refused = [&](const stage_pin_reply& reply) {
    stage_frame cross;
    cross.nonce = 202;
    cross.registration = range.registration;
    cross.phase = static_cast<uint8_t>(stage_phase::cross);
    cross.chunk = 0;
    cross.length = 128 * KiB;
    char* out = nullptr;
    auto piece = chunk_bytes::allocate(4 * KiB, &out);
    std::memset(out, 7, 4 * KiB);
    self->request(reply.session, 10s, stage_cross_atom::value, cross, uint64_t{0}, piece)
      .receive([](stage_frame&) { ADD_FAILURE() << "a CROSS over CAF was taken"; },
               [&](caf::error& e) {
                 EXPECT_TRUE(is(e, errc::protocol_violation)) << describe(e);
                 EXPECT_NE(describe(e).find("crosses by UCX GET"), std::string::npos)
                   << describe(e);
               });
  };
  auto mine = pin_naming(local->worker_id(), 202, by_caf_refused);
  EXPECT_TRUE(mine.session);
  EXPECT_EQ(mine.cross, static_cast<uint8_t>(stage_cross_mode::ucx_get));
  EXPECT_EQ(peer_stat()["source"].value("ucx_sessions", -1), 1);
  expect_peer_at_rest();
}

TEST_F(RemoteStaging, AnExceptionInASessionFailsItCleansUpAndTheNextSessionRuns) {
  start(1);
  auto exposed = expose(256 * KiB, 95);
  auto range = exposed.first;
  auto sum = exposed.second;
  caf::scoped_actor self{local->system()};
  auto source = peer_source();
  // Once after the Pin, once as the end begins (after a READ that went
  // well: its Unpin and its give-back still run).
  for (std::string step : {"pinned", "finishing"}) {
    SCOPED_TRACE(step);
    // A front of its own, one shard, whose first session throws at the step.
    auto rp = one_shard();
    auto throws = std::make_shared<std::atomic<int>>(1);
    rp.step_hook = [throws, step](std::string_view at) {
      if (at == step && throws->fetch_sub(1) > 0)
        throw std::runtime_error("injected at " + step);
    };
    auto front = spawn_remote_stagers(local->system(), rp);
    auto dst = device_here(256 * KiB, 0);
    auto stage = [&] {
      remote_stage_outcome out;
      self->request(front, 40s, remote_stage_atom::value,
                    read_request(range, dst, 256 * KiB, source, 30s))
        .receive([&](remote_stage_outcome& o) { out = std::move(o); },
                 [&](caf::error& e) { out.error = e; });
      return out;
    };
    auto failed = stage();
    ASSERT_TRUE(failed.error);
    EXPECT_NE(describe(failed.error).find("injected at " + step), std::string::npos)
      << describe(failed.error);
    // It unpinned (the source is at rest), gave its chunks and its loan back.
    expect_peer_at_rest();
    expect_local_at_rest();
    EXPECT_EQ(local->device_exposures()->loans(), 0u);
    // The same front runs the next one.
    auto next = stage();
    ASSERT_FALSE(next.error) << describe(next.error);
    EXPECT_EQ(checksum_at(dst, 256 * KiB), sum);
    EXPECT_EQ(rp.stats->completed.load(), 1u);
    EXPECT_EQ(rp.stats->failed.load(), 1u);
    self->send_exit(front, caf::exit_reason::user_shutdown);
    expect_peer_at_rest();
    expect_local_at_rest();
  }
}

TEST_F(RemoteStaging, ARequesterProcessThatDiesMidSessionLeavesTheSourceAtRest) {
  start(1);
  auto [range, sum] = expose(512 * KiB, 99);
  auto dst = device_here(512 * KiB, 0);
  auto out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB); // the pool warms up
  ASSERT_FALSE(out.error) << describe(out.error);
  auto before = peer_stat();
  auto live_before = before["live"]; // the idle chunks' streams, events, mappings
  // A second node, in its own process, is the requester; it knows the
  // source by joining it.
  node_process requester{{"--test-fake-cuda", "--staging-chunk-size", "131072", "--join",
                          peer->endpoint(), "--metrics-port", "0"},
                         {}, FERRY_GPU_PEER};
  auto hello = local->connect(requester.endpoint());
  ASSERT_TRUE(hello) << describe(hello.error());
  // Its READ, with the source's events held: the source's session stays
  // pinned with a copy queued.
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "1"}}));
  auto delegates = before["source"].value("delegates", 0);
  caf::expected<messenger::envelope> read{caf::error{}};
  std::thread reading{[&, worker = hello->worker_id, r = to_string(range)] {
    messenger_client m{*local};
    read = m.call(worker, "test.remote_read", {}, {{"range", r}, {"bytes", "524288"}}, 30s);
  }};
  // The source accepted the session's first copy (its Delegate), which
  // the held event keeps from completing. (The stat is read without a
  // throw: the thread must be joined whatever happens.)
  bool copying = test::eventually([&] {
    auto s = peer_stat();
    return s.contains("source") && s["source"].value("active", 0) == 1
           && s["source"].value("delegates", 0) > delegates;
  });
  requester.kill(SIGKILL);
  reading.join();
  ASSERT_TRUE(copying);
  EXPECT_FALSE(read) << "the killed requester answered";
  // The source sees its requester go down and ends the session as
  // abandoned: it drains the copy it accepted (once the fake lets its
  // event complete), then its chunks, its loan and its slot go back.
  ASSERT_TRUE(ask_peer("test.hold_events", {{"on", "0"}}));
  json s;
  EXPECT_TRUE(test::eventually([&] {
    s = peer_stat();
    return s["source"].value("abandoned", 0) == 1;
  }, 20s)) << s.dump();
  expect_peer_at_rest();
  s = peer_stat();
  EXPECT_EQ(s["source"].value("retained_chunks", -1), 0) << s.dump();
  EXPECT_EQ(s["source"].value("unpinned", -1), before["source"].value("unpinned", -2))
    << s.dump();
  EXPECT_EQ(s["live"], live_before);
  // The source serves the next requester as before.
  std::memset(reinterpret_cast<void*>(dst), 0, 512 * KiB);
  out = remote_staging{*local}.read(range, 0, 0, dst, 512 * KiB);
  ASSERT_FALSE(out.error) << describe(out.error);
  EXPECT_EQ(checksum_at(dst, 512 * KiB), sum);
}

TEST_F(RemoteStaging, AShardLostToAnExceptionIsReplacedAndTheLineGoesOn) {
  start(1);
  auto [range, sum] = expose(256 * KiB, 93);
  caf::scoped_actor self{local->system()};
  auto source = peer_source();
  // A front of its own with one shard, which an exception outside any
  // session takes down as it takes its first request.
  auto rp = one_shard();
  auto throws = std::make_shared<std::atomic<int>>(1);
  auto stats = rp.stats;
  rp.step_hook = [throws, stats](std::string_view at) {
    if (at != "taken" || throws->fetch_sub(1) <= 0)
      return;
    // (Once the second request waits in the line.)
    test::eventually([&] { return stats->queued.load() == 1; });
    throw std::runtime_error("injected in the shard");
  };
  auto front = spawn_remote_stagers(local->system(), rp);
  // Two requests at once: the second waits in the line for the one shard.
  auto first_dst = device_here(256 * KiB, 0);
  auto second_dst = device_here(256 * KiB, 0);
  auto first = self->request(front, 20s, remote_stage_atom::value,
                             read_request(range, first_dst, 256 * KiB, source, 15s));
  auto second = self->request(front, 20s, remote_stage_atom::value,
                              read_request(range, second_dst, 256 * KiB, source, 15s));
  remote_stage_outcome lost;
  first.receive([&](remote_stage_outcome& o) { lost = std::move(o); },
                [&](caf::error& e) { ADD_FAILURE() << "the front did not answer: " << describe(e); });
  remote_stage_outcome served;
  second.receive([&](remote_stage_outcome& o) { served = std::move(o); },
                 [&](caf::error& e) { served.error = e; });
  // The lost shard's caller gets an error and nothing moved; the
  // replacement serves the one waiting.
  EXPECT_TRUE(lost.error);
  EXPECT_EQ(lost.completed, 0u);
  EXPECT_EQ(lost.effect, remote_effect::none);
  ASSERT_FALSE(served.error) << describe(served.error);
  EXPECT_EQ(checksum_at(second_dst, 256 * KiB), sum);
  EXPECT_EQ(rp.stats->completed.load(), 1u);
  EXPECT_EQ(rp.stats->failed.load(), 1u);
  EXPECT_EQ(rp.stats->queued.load(), 0u);
  EXPECT_EQ(rp.stats->active.load(), 0u);
  // The front is still up with one shard, which serves the next.
  auto third = remote_stage_outcome{};
  self->request(front, 20s, remote_stage_atom::value,
                read_request(range, first_dst, 256 * KiB, source, 15s))
    .receive([&](remote_stage_outcome& o) { third = std::move(o); },
             [&](caf::error& e) { third.error = e; });
  ASSERT_FALSE(third.error) << describe(third.error);
  EXPECT_EQ(checksum_at(first_dst, 256 * KiB), sum);
  expect_peer_at_rest();
  expect_local_at_rest();
  EXPECT_EQ(local->device_exposures()->loans(), 0u);
  self->send_exit(front, caf::exit_reason::user_shutdown);
}

TEST_F(RemoteStaging, ALostFinalReceiptFailsTheSessionAndTheLateUnpinStillEndsTheSource) {
  start(1);
  caf::scoped_actor self{local->system()};
  auto source = peer_source();
  for (auto direction : {stage_direction::read, stage_direction::write}) {
    bool write = direction == stage_direction::write;
    SCOPED_TRACE(write ? "write" : "read");
    auto [range, before] = expose(256 * KiB, write ? 97 : 96);
    // A front of its own whose session freezes the source as its end
    // begins: every byte has crossed and every receipt but the last came;
    // the Unpin goes out and its receipt never comes within the bound.
    auto rp = one_shard();
    rp.request_timeout = 1s;
    // (frozen: every thread of the source stopped before the Unpin goes.)
    auto frozen = std::make_shared<std::atomic<int>>(0); // 1 frozen, -1 not in time
    rp.step_hook = [this, frozen](std::string_view at) {
      if (at == "finishing" && frozen->load() == 0)
        frozen->store(peer->freeze() ? 1 : -1);
    };
    auto front = spawn_remote_stagers(local->system(), rp);
    auto local_bytes = write ? pattern_here(256 * KiB, 98) : device_here(256 * KiB, 0);
    auto req = read_request(range, local_bytes, 256 * KiB, source, 30s);
    req.direction = direction;
    remote_stage_outcome out;
    self->request(front, 40s, remote_stage_atom::value, req)
      .receive([&](remote_stage_outcome& o) { out = std::move(o); },
               [&](caf::error& e) { out.error = e; });
    peer->thaw();
    ASSERT_EQ(frozen->load(), 1) << "the source did not stop";
    // No receipt, no completion: nothing counts as moved, and a WRITE that
    // may have run is reported so (it did run: its Delegates were answered).
    EXPECT_TRUE(is(out.error, errc::timeout)) << describe(out.error);
    EXPECT_EQ(out.completed, 0u);
    EXPECT_EQ(out.effect, write ? remote_effect::unknown : remote_effect::none);
    EXPECT_EQ(rp.stats->failed.load(), 1u);
    EXPECT_EQ(rp.stats->effect_unknown.load(), write ? 1u : 0u);
    EXPECT_EQ((write ? rp.stats->bytes_written : rp.stats->bytes_read).load(), 0u);
    // This side gave its chunks and its loan back; the source, thawed,
    // takes the late Unpin as an Unpin (not an abandoned session).
    expect_local_at_rest();
    EXPECT_EQ(local->device_exposures()->loans(), 0u);
    expect_peer_at_rest();
    auto s = peer_stat();
    EXPECT_EQ(s["source"].value("unpinned", 0), write ? 2 : 1) << s.dump();
    EXPECT_EQ(s["source"].value("abandoned", -1), 0) << s.dump();
    if (write)
      EXPECT_EQ(peer_checksum(range), checksum_at(local_bytes, 256 * KiB));
    else
      EXPECT_EQ(checksum_at(local_bytes, 256 * KiB), before);
    self->send_exit(front, caf::exit_reason::user_shutdown);
  }
}

// -- one ordered batch mixing remote staging, device and host gets ------

/// A payload the peer owns (staged from its device): (handle, checksum).
std::pair<data_handle, std::string> peer_payload(RemoteStaging& f, uint64_t bytes,
                                                 uint64_t seed) {
  auto r = f.ask_peer("test.gpu_payload", {{"bytes", std::to_string(bytes)},
                                           {"seed", std::to_string(seed)}});
  if (!r)
    throw std::runtime_error(describe(r.error()));
  return {*parse_data_handle(r->hdrs["handle"]), r->hdrs["checksum"]};
}

TEST_F(RemoteStaging, AnOrderedBatchMixesRemoteStagingDeviceAndHostGetsInOrder) {
  start(2);
  auto [from, from_sum] = expose(384 * KiB, 61);
  auto [to, to_before] = expose(384 * KiB, 62);
  auto [h, payload_sum] = peer_payload(*this, 300 * KiB, 63);
  auto regions = peer_regions(); // the payload's
  // One get alone first: this node keeps its warm destination registered.
  blocking_client client{*local};
  std::vector<char> warm(300 * KiB);
  auto alone = client.get_into(h, warm.data(), warm.size());
  ASSERT_TRUE(alone) << describe(alone.error());
  ASSERT_TRUE(client.detach(h, alone->second) == caf::none);
  auto local_regions = test::registry_value(local->metrics_registry(), "ferry_rdma_live_regions");
  auto staged = device_here(384 * KiB, 0);
  auto device_copy = device_here(300 * KiB, 0);
  std::vector<char> host(300 * KiB, 0);
  // The WRITE sends what the READ before it brought: in order, or the
  // peer's second range would not hold the first one's bytes.
  transfer_batch batch{*local};
  batch.read(from, 0, 0, staged, 384 * KiB)
    .get_into_device(h, 0, device_copy, 300 * KiB)
    .write(to, 0, 0, staged, 384 * KiB)
    .get_into(h, host.data(), host.size());
  auto out = batch.run();
  ASSERT_FALSE(out.error) << describe(out.error);
  EXPECT_EQ(out.failed_at, batch_outcome::npos);
  ASSERT_EQ(out.items.size(), 4u);
  for (auto& item : out.items)
    EXPECT_EQ(item.state, batch_item_state::done) << describe(item.error);
  EXPECT_EQ(out.items[0].bytes, 384 * KiB);
  EXPECT_EQ(out.items[1].bytes, 300 * KiB);
  EXPECT_EQ(out.items[2].bytes, 384 * KiB);
  EXPECT_EQ(out.items[3].bytes, 300 * KiB);
  EXPECT_EQ(checksum_at(staged, 384 * KiB), from_sum);
  EXPECT_EQ(peer_checksum(to), from_sum);
  EXPECT_NE(from_sum, to_before);
  EXPECT_EQ(checksum_at(device_copy, 300 * KiB), payload_sum);
  EXPECT_EQ(hex_checksum(host.data(), host.size()), payload_sum);
  // Each get's lease is the caller's, as after the same get alone.
  for (size_t i : {size_t{1}, size_t{3}}) {
    EXPECT_NE(out.items[i].lease_id, 0u);
    EXPECT_TRUE(client.detach(h, out.items[i].lease_id) == caf::none);
  }
  EXPECT_EQ(local->remote_staging()->completed.load(), 2u);
  expect_peer_at_rest(regions);
  expect_local_at_rest(local_regions);
}

TEST_F(RemoteStaging, ABatchWithOneBadItemRunsNothing) {
  start(1);
  auto [range, sum] = expose(256 * KiB, 64);
  auto dst = device_here(256 * KiB, 0);
  auto zeros = checksum_at(dst, 256 * KiB);
  auto pins = peer_stat()["source"].value("pins", -1);
  std::vector<char> host_memory(64 * KiB);
  auto h = peer_payload(*this, 4 * KiB, 65).first; // (a plain name: lambdas capture it)
  struct bad {
    const char* why;
    std::function<void(transfer_batch&)> add;
    errc code;
  };
  std::vector<bad> cases{
    {"a host get without a buffer", [&](transfer_batch& b) { b.get_into(h, nullptr, 4 * KiB); },
     errc::invalid_argument},
    {"a device item into host memory",
     [&](transfer_batch& b) {
       b.get_into_device(h, 0, reinterpret_cast<staging::device_ptr>(host_memory.data()),
                         host_memory.size());
     },
     errc::invalid_argument},
    {"a READ past the range's end",
     [&, r = range](transfer_batch& b) { b.read(r, 128 * KiB, 0, dst, 256 * KiB); },
     errc::invalid_argument},
    {"a device get of no handle",
     [&](transfer_batch& b) { b.get_into_device(data_handle{}, 0, dst, 4 * KiB); },
     errc::invalid_argument},
    {"a host get whose payload does not fit",
     [&](transfer_batch& b) { b.get_into(h, host_memory.data(), 4 * KiB - 1); },
     errc::payload_too_large},
    {"a get of a handle its owner does not know",
     [&](transfer_batch& b) {
       auto unknown = h;
       unknown.lo ^= 0xffff;
       b.get_into(unknown, host_memory.data(), host_memory.size());
     },
     errc::unknown_handle},
    {"a device item past its allocation's end",
     [&](transfer_batch& b) { b.get_into_device(h, 0, dst + 4 * KiB, 256 * KiB); },
     errc::invalid_argument},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.why);
    transfer_batch batch{*local};
    batch.read(range, 0, 0, dst, 256 * KiB); // good, and first
    c.add(batch);
    auto out = batch.run();
    EXPECT_TRUE(is(out.error, c.code)) << describe(out.error);
    EXPECT_EQ(out.failed_at, 1u);
    EXPECT_EQ(out.items[0].state, batch_item_state::not_run);
    EXPECT_EQ(out.items[1].state, batch_item_state::failed);
  }
  // Not one of them ran the good READ before it.
  EXPECT_EQ(checksum_at(dst, 256 * KiB), zeros);
  EXPECT_EQ(peer_stat()["source"].value("pins", -2), pins);
  EXPECT_EQ(local->remote_staging()->completed.load()
              + local->remote_staging()->failed.load(), 0u);
}

TEST_F(RemoteStaging, AFailedBatchItemStopsTheItemsAfterIt) {
  start(1);
  auto [range, sum] = expose(256 * KiB, 66);
  auto [h, payload_sum] = peer_payload(*this, 4 * KiB, 67);
  auto regions = peer_regions(); // the payload's
  auto dst = device_here(256 * KiB, 0);
  auto stale = range;
  stale.epoch ^= 1; // an earlier incarnation's: the source refuses its Pin
  std::vector<char> host(4 * KiB, 0);
  std::vector<char> first_host(4 * KiB, 0);
  transfer_batch batch{*local};
  batch.read(range, 0, 0, dst, 256 * KiB)
    .get_into(h, first_host.data(), first_host.size())
    .read(stale, 0, 0, dst, 256 * KiB)
    .get_into(h, host.data(), host.size());
  auto out = batch.run();
  EXPECT_TRUE(is(out.error, errc::invalid_argument)) << describe(out.error); // the Pin's
  EXPECT_NE(describe(out.error).find("another incarnation"), std::string::npos)
    << describe(out.error);
  EXPECT_EQ(out.failed_at, 2u);
  EXPECT_EQ(out.items[0].state, batch_item_state::done);
  EXPECT_EQ(checksum_at(dst, 256 * KiB), sum);
  EXPECT_EQ(out.items[1].state, batch_item_state::done);
  EXPECT_EQ(hex_checksum(first_host.data(), first_host.size()), payload_sum);
  EXPECT_EQ(out.items[2].state, batch_item_state::failed);
  EXPECT_EQ(out.items[2].bytes, 0u);
  EXPECT_EQ(describe(out.error), describe(out.items[2].error));
  // The host get after it never ran: its buffer is as it was, no lease.
  EXPECT_EQ(out.items[3].state, batch_item_state::not_run);
  EXPECT_EQ(out.items[3].lease_id, 0u);
  EXPECT_EQ(std::count(host.begin(), host.end(), 0), static_cast<long>(host.size()));
  // The done get's lease is still the caller's; one call ends it.
  EXPECT_NE(out.items[1].lease_id, 0u);
  EXPECT_FALSE(batch.detach_leases(out)) << "detached";
  EXPECT_EQ(out.items[1].lease_id, 0u);
  expect_peer_at_rest(regions);
  expect_local_at_rest();
}

// (No processes: the preparation's rule for a node without CUDA.)
TEST(RemoteStagingBatch, ADeviceItemWithoutCudaFailsThePreparationAHostGetDoesNot) {
  staging::fake_cuda fake;
  auto ctx = fake.retain_context(0);
  ASSERT_TRUE(ctx);
  fake.push_context(*ctx);
  auto device = fake.mem_alloc(4 * KiB);
  ASSERT_TRUE(device);
  batch_item read;
  read.kind = batch_item_kind::remote_read;
  read.range.bytes = 4 * KiB;
  read.local_device = *device;
  read.length = 4 * KiB;
  EXPECT_FALSE(check_batch_item(read, &fake, ""));
  auto huge = read; // a length that wraps past the allocation
  huge.kind = batch_item_kind::get_into_device;
  huge.handle.hi = 1;
  huge.length = std::numeric_limits<uint64_t>::max() - 8;
  EXPECT_TRUE(is(check_batch_item(huge, &fake, ""), errc::invalid_argument));
  EXPECT_TRUE(is(check_batch_item(read, nullptr, ""), errc::staging_unavailable));
  EXPECT_TRUE(is(check_batch_item(read, &fake, "no driver"), errc::staging_unavailable));
  batch_item host_get;
  host_get.kind = batch_item_kind::get_into_host;
  host_get.handle.hi = 1;
  char buffer[16];
  host_get.local_host = buffer;
  host_get.length = sizeof buffer;
  EXPECT_FALSE(check_batch_item(host_get, nullptr, "no driver"));
  fake.mem_free(*device);
  fake.pop_context();
  fake.release_context(0);
}

} // namespace
