// The control channel between real processes (issue 23): two UCX nodes
// agree on it at their hello and make their rendezvous calls as UCX active
// messages, over tcp and over shared memory; the kill switch keeps CAF
// requests; a caller's leases are its node's, and end with it; a dead
// owner fails the calls out to it at once; a pair whose probe gets no
// answer (UCX's port closed) keeps CAF requests, and a pair whose frame
// fails to send goes back to them; an owner whose answers a stopped
// consumer cannot read (shared memory) naps instead of spinning on UCX's
// refusals to sleep. Asserted through the metrics
// (ferry_control_calls_total, ferry_control_channel), the engine's stat and
// the bytes' checksums.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <future>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"
#include "tests/rdma/engine_stat.hpp"
#include "tests/rdma/ucx_transports.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using test::eventually;
using test::node_process;

namespace {

constexpr uint64_t KiB_ = 1024;
constexpr uint64_t MiB_ = 1024 * 1024;

node_config local_config() {
  node_config c;
  c.listen = false;
  c.request_timeout_ms = 30000;
  c.control_channel = "auto";
  return c;
}

double calls(node& n, const char* channel) {
  return test::control_calls(n.metrics_registry(), channel);
}

double probes(node& n, const char* result) {
  return test::registry_value(n.metrics_registry(), "ferry_control_probes_total", "result",
                              result);
}

double peers_on(node& n, const char* channel) {
  return test::control_peers(n.metrics_registry(), channel);
}

double scraped(const node_process& p, const std::string& series) {
  auto v = test::series_value(test::scrape_metrics(p.metrics_port()), series);
  return v < 0 ? 0 : v;
}

/// The same three for the remote node, from its scraped metrics.
double metric_of(const node_process& p, const char* name, const char* label,
                 const char* value) {
  return scraped(p, std::string{name} + "{" + label + "=\"" + value + "\"}");
}
double calls(const node_process& p, const char* channel) {
  return metric_of(p, "ferry_control_calls_total", "channel", channel);
}
double probes(const node_process& p, const char* result) {
  return metric_of(p, "ferry_control_probes_total", "result", result);
}
double peers_on(const node_process& p, const char* channel) {
  return metric_of(p, "ferry_control_channel", "channel", channel);
}

nlohmann::json channel_stat(node& n) { return test::engine_stat(n, 10s)["control_channel"]; }

/// One `ferry node` process and one in-process node, both on the transport
/// under test, connected.
struct ControlChannelCluster : ::testing::TestWithParam<std::string> {
  void SetUp() override {
    setenv("UCX_TLS", test::ucx_tls_for(GetParam()).c_str(), 1);
    test::allow_emulated_gets_for(GetParam());
    setenv("UCX_NET_DEVICES", "lo", 1);
    unsetenv("FERRY_CONTROL_CHANNEL"); // each node's option decides here
  }

  /// The remote runs `--control-channel auto` unless `remote_args` say.
  void start(std::vector<std::string> remote_args = {}, node_config cfg = local_config()) {
    if (std::find(remote_args.begin(), remote_args.end(), "--control-channel")
        == remote_args.end())
      remote_args.insert(remote_args.end(), {"--control-channel", "auto"});
    remote_args.push_back("--metrics-port");
    remote_args.push_back("0");
    remote = std::make_unique<node_process>(remote_args,
                                            std::vector<std::string>{
                                              "UCX_TLS=" + test::ucx_tls_for(GetParam())});
    local = std::make_unique<node>(cfg);
    ASSERT_FALSE(local->start());
    auto hello = local->connect(remote->endpoint());
    ASSERT_TRUE(hello) << describe(hello.error());
    remote_hello = *hello;
    client = std::make_unique<blocking_client>(*local);
  }

  gateway_actor remote_gateway() const {
    return caf::actor_cast<gateway_actor>(remote_hello.gateway);
  }

  /// Stages bytes on the remote node: it pulls them from our owner.
  data_handle stage_remotely(const byte_buffer& bytes, bool pinned) {
    auto mine = client->register_data(bytes);
    EXPECT_TRUE(mine);
    auto h = client->adopt(remote_gateway(), *mine, pinned);
    EXPECT_TRUE(h) << describe(h.error());
    return *h;
  }

  void get_and_check(const data_handle& h, const byte_buffer& want) {
    auto got = client->get(h);
    ASSERT_TRUE(got) << describe(got.error());
    EXPECT_EQ(checksum64(got->bytes.data(), got->bytes.size()),
              checksum64(want.data(), want.size()));
    ASSERT_TRUE(client->release(h, got->lease_id));
  }

  std::unique_ptr<node_process> remote;
  std::unique_ptr<node> local;
  std::unique_ptr<blocking_client> client;
  peer_hello remote_hello;
};

} // namespace

INSTANTIATE_TEST_SUITE_P(Transports, ControlChannelCluster, ::testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });

TEST_P(ControlChannelCluster, RendezvousCallsGoOverActiveMessagesBothWays) {
  start();
  ASSERT_TRUE(eventually([&] {
    return peers_on(*remote, "ucx_am") == 1;
  }));
  EXPECT_EQ(peers_on(*local, "ucx_am"), 1);
  // An eager payload, a chunked one of several chunks, an RDMA one: each
  // adopted by the remote node (its consumer calls our owner) and got back.
  std::vector<std::pair<uint64_t, bool>> cases{
    {4 * KiB_, false}, {1536 * KiB_, false}, {4 * MiB_, true}};
  for (auto [size, pinned] : cases) {
    SCOPED_TRACE(size);
    auto bytes = test::payload(size, size);
    auto h = stage_remotely(bytes, pinned);
    get_and_check(h, bytes);
  }
  // Each side proved the channel with one round trip before using it.
  EXPECT_EQ(probes(*local, "ok"), 1);
  EXPECT_EQ(probes(*local, "failed"), 0);
  EXPECT_EQ(probes(*remote, "ok"), 1);
  EXPECT_GE(calls(*local, "ucx_am"), 8); // acquires, 3 pulls, the RDMA hold, releases
  EXPECT_EQ(calls(*local, "caf"), 0);
  EXPECT_GE(calls(*remote, "ucx_am"), 5);
  EXPECT_EQ(calls(*remote, "caf"), 0);
  auto stat = channel_stat(*local);
  EXPECT_EQ(stat["peers"], 1);
  EXPECT_GE(stat["calls_received"].get<int>(), 5); // the remote's adopts
  EXPECT_EQ(stat["calls_out"], 0);
  for (auto& [why, count] : stat["dropped"].items())
    EXPECT_EQ(count, 0) << why;
  // The three chunks of the chunked get reached our consumer in UCX's own
  // buffers, with no copy, and each buffer went back to UCX once written.
  EXPECT_GE(stat["inbox"]["held"].get<int>(), 3);
  EXPECT_TRUE(eventually([&] { return channel_stat(*local)["inbox"]["held_now"] == 0; }))
    << channel_stat(*local).dump();
  // The pair's tokens are nobody else's business: the peer shows "ucx_am".
  auto text = client->stat(remote_gateway());
  ASSERT_TRUE(text);
  auto peers = nlohmann::json::parse(*text)["peers"];
  ASSERT_EQ(peers.size(), 1u);
  auto caps = peers[0]["capabilities"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(caps.begin(), caps.end(), "ucx_am"), caps.end());
  for (auto& c : caps)
    EXPECT_EQ(c.find("ucx_am:"), std::string::npos) << c;
}

TEST_P(ControlChannelCluster, TheKillSwitchOnOneNodeKeepsCafRequestsBetweenThem) {
  start({"--control-channel", "caf"});
  auto bytes = test::payload(1536 * KiB_, 7);
  auto h = stage_remotely(bytes, false);
  get_and_check(h, bytes);
  EXPECT_GE(calls(*local, "caf"), 4);
  EXPECT_EQ(calls(*local, "ucx_am"), 0);
  EXPECT_EQ(peers_on(*local, "caf"), 1);
  EXPECT_EQ(peers_on(*remote, "ucx_am"), 0);
  EXPECT_EQ(channel_stat(*local)["peers"], 0); // the remote offered no token
}

TEST_P(ControlChannelCluster, ACallersLeasesAreItsNodesAndEndWithIt) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "one transport is enough for the lease attribution";
  auto cfg = local_config();
  cfg.test_stall_pulls_from = 2; // our owner never answers pulls from chunk 2 on
  cfg.transfer_timeout_ms = 3000; // with the next: bound our adopt request,
  cfg.request_timeout_ms = 5000;  // whose node dies (16 s)
  start({}, cfg);
  // The remote's calls take the channel once its own probe came back.
  ASSERT_TRUE(eventually([&] {
    return peers_on(*remote, "ucx_am") == 1;
  }));
  auto mine = client->register_data(test::payload(8 * 512 * KiB_, 3));
  ASSERT_TRUE(mine);
  // The remote pulls our payload over the channel and stalls on chunk 2,
  // its lease held here.
  auto adopting = std::async(std::launch::async,
                             [&] { return client->adopt(remote_gateway(), *mine, false); });
  ASSERT_TRUE(eventually([&] {
    return test::registry_value(local->metrics_registry(), "ferry_rendezvous_leases") == 1
           && channel_stat(*local)["calls_received"].get<int>() >= 3
           && test::registry_value(local->metrics_registry(),
                                   "ferry_rendezvous_chunks_served_total")
                >= 2;
  }));
  EXPECT_EQ(test::registry_value(local->metrics_registry(), "ferry_rendezvous_chunks_served_total"),
            2);
  remote->kill(SIGKILL);
  // The gateway sees the node go: the lease it took over the channel ends.
  ASSERT_TRUE(eventually(
    [&] { return test::registry_value(local->metrics_registry(), "ferry_rendezvous_leases") == 0; },
    20s));
  EXPECT_EQ(test::registry_value(local->metrics_registry(), "ferry_rendezvous_leases_dropped_total"),
            1);
  EXPECT_TRUE(eventually([&] { return channel_stat(*local)["peers"] == 0; }));
  EXPECT_EQ(adopting.wait_for(40s), std::future_status::ready);
}

TEST_P(ControlChannelCluster, AnOwnerThatDiesFailsTheCallsOutToItAtOnce) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "one transport is enough for a dead owner";
  auto cfg = local_config();
  cfg.request_timeout_ms = 60000; // the failure must come from the peer going
  start({"--test-stall-pulls-from", "4"}, cfg);
  auto mine = client->register_data(test::payload(16 * 512 * KiB_, 5));
  ASSERT_TRUE(mine);
  auto h = client->adopt(remote_gateway(), *mine, false);
  ASSERT_TRUE(h) << describe(h.error());
  auto pending = std::async(std::launch::async, [&] { return client->get(*h); });
  ASSERT_TRUE(eventually([&] { return channel_stat(*local)["calls_out"].get<int>() > 0; }));
  ASSERT_TRUE(eventually([&] {
    return test::registry_value(local->metrics_registry(), "ferry_rendezvous_chunks_pulled_total")
           >= 4;
  }));
  remote->kill(SIGKILL);
  ASSERT_EQ(pending.wait_for(20s), std::future_status::ready);
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::peer_down)) << describe(r.error());
  EXPECT_TRUE(eventually([&] { return channel_stat(*local)["calls_out"] == 0; }));
  EXPECT_GT(calls(*local, "ucx_am"), 4);
}

TEST_P(ControlChannelCluster, APeerThatFramesDoNotReachKeepsCafRequests) {
  // The remote drops every frame that reaches it, as where UCX's port to it
  // is closed and CAF's is open: our probe gets no answer by its deadline.
  auto cfg = local_config();
  cfg.request_timeout_ms = 2000; // the probe's deadline
  start({"--test-drop-control-frames"}, cfg);
  ASSERT_TRUE(eventually([&] { return probes(*local, "failed") == 1; }));
  EXPECT_EQ(probes(*local, "ok"), 0);
  EXPECT_EQ(peers_on(*local, "ucx_am"), 0);
  EXPECT_EQ(peers_on(*local, "caf"), 1);
  // The remote never heard ctl_ready: its calls stay on CAF too.
  EXPECT_EQ(peers_on(*remote, "ucx_am"), 0);
  EXPECT_EQ(probes(*remote, "ok"), 0);
  auto bytes = test::payload(1536 * KiB_, 11);
  auto h = stage_remotely(bytes, false); // the remote calls our owner
  get_and_check(h, bytes);               // we call the remote's
  EXPECT_GE(calls(*local, "caf"), 4);
  EXPECT_EQ(calls(*local, "ucx_am"), 0);
  EXPECT_GE(calls(*remote, "caf"), 4);
  EXPECT_EQ(calls(*remote, "ucx_am"), 0);
}

TEST_P(ControlChannelCluster, ANodeThatDropsTheProbesAnswerKeepsCafRequests) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "one transport is enough for the other side";
  auto cfg = local_config();
  cfg.request_timeout_ms = 2000;
  cfg.test_drop_control_frames = true; // the remote's answer never reaches us
  start({}, cfg);
  ASSERT_TRUE(eventually([&] { return probes(*local, "failed") == 1; }));
  EXPECT_EQ(peers_on(*local, "ucx_am"), 0);
  EXPECT_EQ(peers_on(*remote, "ucx_am"), 0);
  auto bytes = test::payload(4 * KiB_, 12);
  get_and_check(stage_remotely(bytes, false), bytes);
  EXPECT_EQ(calls(*local, "ucx_am"), 0);
  EXPECT_EQ(calls(*remote, "ucx_am"), 0);
}

TEST_P(ControlChannelCluster, AFrameThatFailsToSendPutsThePairBackOnCafRequests) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "one transport is enough for the fallback";
  auto cfg = local_config();
  cfg.test_fail_control_sends_after = 2; // our probe and our answer to the remote's
  start({}, cfg);
  ASSERT_TRUE(eventually([&] {
    return peers_on(*local, "ucx_am") == 1
           && peers_on(*remote, "ucx_am") == 1;
  }));
  // Our third frame, the answer to the remote's first call, is refused: the
  // pair leaves the channel on both sides, the remote's call, whose answer
  // cannot come, is made again by CAF, and so are our calls after.
  auto bytes = test::payload(1536 * KiB_, 13);
  auto mine = client->register_data(bytes);
  ASSERT_TRUE(mine);
  auto h = client->adopt(remote_gateway(), *mine, false); // the remote pulls by the channel
  ASSERT_TRUE(h) << describe(h.error());
  get_and_check(*h, bytes);
  ASSERT_TRUE(eventually([&] {
    return peers_on(*local, "ucx_am") == 0
           && peers_on(*remote, "ucx_am") == 0;
  }));
  EXPECT_EQ(test::registry_value(local->metrics_registry(), "ferry_control_fallbacks_total"),
            1);
  EXPECT_EQ(channel_stat(*local)["fallen_back"], 1);
  EXPECT_EQ(calls(*local, "ucx_am"), 0);
  EXPECT_GE(calls(*local, "caf"), 4);
  // From then on, the remote's calls go by CAF too.
  auto caf_before = calls(*remote, "caf");
  auto more = test::payload(4 * KiB_, 14);
  get_and_check(stage_remotely(more, false), more);
  EXPECT_GT(calls(*remote, "caf"), caf_before);
}

TEST_P(ControlChannelCluster, AnOwnerWhoseAnswersAStoppedConsumerCannotReadNaps) {
  if (GetParam() != "sm")
    GTEST_SKIP() << "over shared memory a 512 KiB answer waits for the reader's "
                    "progress; over tcp the socket takes it";
  auto cfg = local_config();
  cfg.transfer_timeout_ms = 10000; // bounds the adopt (twice this) if the link goes
  start({}, cfg);
  ASSERT_TRUE(eventually([&] { return peers_on(*remote, "ucx_am") == 1; }));
  auto bytes = test::payload(64 * MiB_, 21);
  auto mine = client->register_data(bytes);
  ASSERT_TRUE(mine);
  // The remote pulls our 128 chunks over the channel; we stop it midway.
  // Our next answers cannot go into its FIFO, so UCX refuses our engine's
  // sleep with nothing to move: the engine must nap, not spin on it. If
  // the stop caught the remote with no pull out to us, let it pull more
  // (each stop is short: at about 2 s CAF's link to it goes).
  auto served = [&] {
    return test::registry_value(local->metrics_registry(),
                                "ferry_rendezvous_chunks_served_total");
  };
  auto naps = [&] { return test::engine_stat(*local, 10s)["stalled_naps"]; };
  auto adopting = std::async(std::launch::async,
                             [&] { return client->adopt(remote_gateway(), *mine, false); });
  bool napped = false;
  for (int attempt = 0; attempt < 4 && !napped; ++attempt) {
    auto before = served();
    if (!eventually([&] { return served() >= before + 4; }))
      break; // the transfer ended first
    ASSERT_TRUE(remote->freeze());
    napped = eventually(
      [&] {
        auto n = naps();
        return n.is_number() && n.get<int>() > 0;
      },
      600ms);
    remote->thaw();
  }
  EXPECT_TRUE(napped) << test::engine_stat(*local, 10s).dump();
  // Nothing was lost: the remote's copy comes back whole.
  ASSERT_EQ(adopting.wait_for(60s), std::future_status::ready);
  auto h = adopting.get();
  ASSERT_TRUE(h) << describe(h.error());
  get_and_check(*h, bytes);
}
