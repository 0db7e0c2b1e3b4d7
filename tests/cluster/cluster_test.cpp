// Multi-process tests on loopback: this test process runs a node in-process
// and talks to `ferry node` processes. Bytes are checked with checksums.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <future>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/rendezvous/path_metrics.hpp"
#include "apps/job_types.hpp"
#include "apps/shard_math.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using test::node_process;

namespace {

node_config client_config() {
  node_config c;
  c.listen = false;
  c.request_timeout_ms = 30000;
  return c;
}

/// One `ferry node` process and one in-process node connected to it.
struct Cluster : ::testing::Test {
  explicit Cluster(std::vector<std::string> remote_args = {},
                   node_config local_cfg = client_config())
    : remote(std::move(remote_args)),
      local(local_cfg),
      client(local) {
    if (auto err = local.start())
      throw std::runtime_error(describe(err));
    auto hello = local.connect(remote.endpoint());
    if (!hello)
      throw std::runtime_error(describe(hello.error()));
    remote_hello = *hello;
    remote_gw = caf::actor_cast<gateway_actor>(hello->gateway);
    remote_owner = caf::actor_cast<owner_actor>(hello->owner);
  }

  /// Stages `bytes` here and has the remote node adopt (pull) them.
  data_handle stage_remote(const byte_buffer& bytes) {
    auto h = client.register_data(bytes);
    EXPECT_TRUE(h);
    auto copy = client.adopt(remote_gw, *h);
    EXPECT_TRUE(copy) << describe(copy.error());
    return *copy;
  }

  nlohmann::json remote_stat() {
    auto text = client.stat(remote_gw);
    EXPECT_TRUE(text) << describe(text.error());
    return nlohmann::json::parse(*text);
  }

  /// This node's gets took this run's channel: the control channel where
  /// every peer it called serves it, CAF requests in the caf_channel: reruns.
  void TearDown() override {
    if ((peers_serve_channel && local.has_ucx()) || !test::control_channel_on()) {
      EXPECT_EQ(test::calls_by_other_channel(local.metrics_registry()), 0);
    }
  }

  /// A raw control call to the remote owner.
  template <class Reply>
  caf::expected<Reply> raw_call(caf::atom_value, const std::string&);

  node_process remote;
  node local;
  blocking_client client;
  peer_hello remote_hello;
  gateway_actor remote_gw;
  owner_actor remote_owner;
  bool peers_serve_channel = true; // false: a test called a node without UCX
};

template <class Atom, class Reply>
caf::expected<Reply> call_owner(node& n, const owner_actor& owner, Atom atom,
                                const std::string& body) {
  caf::scoped_actor self{n.system()};
  caf::expected<Reply> result = make_error(errc::timeout);
  self->request(owner, n.config().request_timeout(), atom, body)
    .receive([&](Reply& r) { result = std::move(r); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

using ClusterChunked = Cluster;
using ClusterLifecycle = Cluster;

} // namespace

TEST_F(ClusterChunked, MovesEverySizeBothWays) {
  const size_t sizes[] = {0, 1, 4096, 512 * 1024 - 1, 512 * 1024,
                          512 * 1024 + 1, 64 * 1024 * 1024};
  for (auto n : sizes) {
    SCOPED_TRACE("size " + std::to_string(n));
    auto bytes = test::payload(n, n + 1);
    auto want = checksum64(bytes.data(), bytes.size());
    auto on_remote = stage_remote(bytes); // remote pulled from us
    EXPECT_EQ(on_remote.owner(), remote.worker_id());
    auto got = client.get(on_remote);     // we pull from remote
    ASSERT_TRUE(got) << describe(got.error());
    EXPECT_EQ(got->bytes.size(), n);
    EXPECT_EQ(checksum64(got->bytes.data(), got->bytes.size()), want);
    auto rel = client.release(on_remote, got->lease_id);
    ASSERT_TRUE(rel) << describe(rel.error());
    EXPECT_TRUE(rel->freed);
  }
  auto stat = remote_stat();
  EXPECT_EQ(stat["owner"]["slots"], 0);
  EXPECT_EQ(stat["owner"]["leases"], 0);
  // adopt released our staged originals too.
  EXPECT_EQ(test::registry_value(local.metrics_registry(), "ferry_rendezvous_slots"), 0);
}

TEST_F(ClusterChunked, GetIntoACallerBuffer) {
  auto bytes = test::payload(3 * 512 * 1024 + 17);
  auto h = stage_remote(bytes);
  byte_buffer dest(bytes.size());
  auto r = client.get_into(h, dest.data(), dest.size());
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->first, bytes.size());
  EXPECT_EQ(dest, bytes);
  ASSERT_TRUE(client.release(h, r->second));
}

TEST_F(ClusterLifecycle, RefAndTwoConsumers) {
  auto bytes = test::payload(1024 * 1024 + 3);
  auto h = stage_remote(bytes);
  auto refs = client.ref(h);
  ASSERT_TRUE(refs);
  EXPECT_EQ(*refs, 2u);
  // A second consumer node in this process, connected to the same owner.
  node other{client_config()};
  ASSERT_FALSE(other.start());
  ASSERT_TRUE(other.connect(remote.endpoint()));
  blocking_client other_client{other};
  auto a = client.get(h);
  auto b = other_client.get(h);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->bytes, bytes);
  EXPECT_EQ(b->bytes, bytes);
  EXPECT_EQ(remote_stat()["owner"]["leases"], 2);
  auto ra = client.release(h, a->lease_id);
  ASSERT_TRUE(ra);
  EXPECT_FALSE(ra->freed);
  EXPECT_EQ(remote_stat()["owner"]["slots"], 1);
  auto rb = other_client.release(h, b->lease_id);
  ASSERT_TRUE(rb);
  EXPECT_TRUE(rb->freed);
  EXPECT_EQ(remote_stat()["owner"]["slots"], 0);
}

TEST_F(ClusterLifecycle, DetachThenGetAgain) {
  auto bytes = test::payload(700 * 1024);
  auto h = stage_remote(bytes);
  auto first = client.get(h);
  ASSERT_TRUE(first);
  ASSERT_FALSE(client.detach(h, first->lease_id));
  EXPECT_EQ(remote_stat()["owner"]["leases"], 0);
  auto md = client.metadata(h);
  ASSERT_TRUE(md);
  EXPECT_EQ(md->total_len, bytes.size());
  EXPECT_EQ(md->refcount, 1u);
  auto second = client.get(h);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->bytes, bytes);
  auto rel = client.release(h, second->lease_id);
  ASSERT_TRUE(rel);
  EXPECT_TRUE(rel->freed);
}

TEST_F(ClusterLifecycle, ErrorsAreClearAndLoseNothing) {
  auto bytes = test::payload(3 * 512 * 1024);
  auto h = stage_remote(bytes);
  ASSERT_TRUE(client.ref(h)); // refcount 2, so release-twice can be told apart

  // Unknown handle.
  auto unknown = client.get(data_handle{h.hi, h.lo + 1000});
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(is(unknown.error(), errc::unknown_handle)) << describe(unknown.error());

  // Release twice.
  auto got = client.get(h);
  ASSERT_TRUE(got);
  ASSERT_TRUE(client.release(h, got->lease_id));
  auto twice = client.release(h, got->lease_id);
  ASSERT_FALSE(twice);
  EXPECT_TRUE(is(twice.error(), errc::unknown_lease)) << describe(twice.error());

  // Pull past the last chunk of an open transfer.
  rv_acquire_request acq;
  acq.handle = h;
  auto body = call_owner<rv_acquire_atom, std::string>(local, remote_owner,
                                                       rv_acquire_atom::value,
                                                       encode(acq));
  ASSERT_TRUE(body) << describe(body.error());
  auto ready = decode<rv_acquire_response>(*body)->ready;
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->chunk_count, 3u);
  auto past = call_owner<rv_pull_atom, chunk_bytes>(
    local, remote_owner, rv_pull_atom::value,
    encode(rv_pull_request{ready->transfer_id, 3}));
  ASSERT_FALSE(past);
  EXPECT_TRUE(is(past.error(), errc::chunk_out_of_range)) << describe(past.error());
  ASSERT_FALSE(client.detach(h, ready->lease_id));

  // Malformed bodies.
  for (std::string bad : {"", "{", "[]", "{\"handle\":{\"hi\":-1,\"lo\":0}}"}) {
    auto r = call_owner<rv_acquire_atom, std::string>(local, remote_owner,
                                                      rv_acquire_atom::value, bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_TRUE(is(r.error(), errc::malformed_body)) << describe(r.error());
  }

  // Nothing was lost: the payload is intact and no lease leaked.
  auto stat = remote_stat();
  EXPECT_EQ(stat["owner"]["leases"], 0);
  EXPECT_EQ(stat["owner"]["slots"], 1);
  auto again = client.get(h);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->bytes, bytes);
  ASSERT_TRUE(client.release(h, again->lease_id));
}

TEST_F(ClusterLifecycle, PayloadOverTheReceiversLimitIsRefusedBeforeAllocating) {
  auto h = stage_remote(test::payload(8192));
  node_config small = client_config();
  small.staged_payload_max = 4096;
  node limited{small};
  ASSERT_FALSE(limited.start());
  ASSERT_TRUE(limited.connect(remote.endpoint()));
  blocking_client limited_client{limited};
  auto r = limited_client.get(h);
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::payload_too_large));
  auto text = describe(r.error());
  EXPECT_NE(text.find("8192"), std::string::npos) << text;
  EXPECT_NE(text.find("4096"), std::string::npos) << text;
  EXPECT_EQ(test::registry_value(limited.metrics_registry(),
                                 "ferry_rendezvous_chunks_pulled_total"),
            0);
  // The refused lease was detached; the payload stays for others.
  for (int i = 0; i < 100 && remote_stat()["owner"]["leases"] != 0; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(remote_stat()["owner"]["leases"], 0);
  auto ok = client.get(h);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->bytes.size(), 8192u);
}

TEST_F(ClusterChunked, MetricsEndpointCountsTheChunkedPath) {
  // This fixture's remote has no metrics port; start one that has, and no
  // UCX, so every decision is the chunked path's.
  node_process scraped{{"--metrics-port", "0", "--ucx", "false"}};
  peers_serve_channel = false;
  ASSERT_TRUE(local.connect(scraped.endpoint()));
  auto gw = caf::actor_cast<gateway_actor>(local.connect(scraped.endpoint())->gateway);
  auto mine = client.register_data(test::payload(2 * 512 * 1024 + 1));
  ASSERT_TRUE(mine);
  auto h = client.adopt(gw, *mine);
  ASSERT_TRUE(h) << describe(h.error());
  auto got = client.get(*h);
  ASSERT_TRUE(got);
  auto text = test::scrape_metrics(scraped.metrics_port());
  ASSERT_NE(text.find("200 OK"), std::string::npos) << text;
  // The remote answered our acquire (no offer) and pulled 3 chunks from us.
  EXPECT_EQ(test::series_value(
              text, R"(ferry_rendezvous_rdma_path_total{path="chunked",reason="no_offer"})"),
            1);
  EXPECT_EQ(test::series_value(
              text,
              R"(ferry_rendezvous_rdma_path_total{path="chunked",reason="not_configured"})"),
            1);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_chunks_served_total"), 3);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_chunks_pulled_total"), 3);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_leases"), 1);
  ASSERT_TRUE(client.release(*h, got->lease_id));
  text = test::scrape_metrics(scraped.metrics_port());
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_slots"), 0);
}

TEST_F(ClusterChunked, ASmallPayloadComesWithItsAcquireUnlessTheConsumerTurnsItOff) {
  node_process scraped{{"--metrics-port", "0", "--ucx", "false"}};
  peers_serve_channel = false;
  auto gw = caf::actor_cast<gateway_actor>(local.connect(scraped.endpoint())->gateway);
  auto bytes = test::payload(4096, 3);
  auto mine = client.register_data(bytes);
  ASSERT_TRUE(mine);
  auto h = client.adopt(gw, *mine); // the remote gets it from us: eagerly too
  ASSERT_TRUE(h) << describe(h.error());
  auto got = client.get(*h);
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(checksum64(got->bytes.data(), got->bytes.size()),
            checksum64(bytes.data(), bytes.size()));
  auto text = test::scrape_metrics(scraped.metrics_port());
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_eager_answers_total"), 1);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_eager_bytes_served_total"), 4096);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_chunks_served_total"), 0);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_eager_gets_total"), 1); // the adopt
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_leases"), 1); // held for our get
  EXPECT_EQ(test::registry_value(local.metrics_registry(), "ferry_rendezvous_eager_gets_total"),
            1);
  EXPECT_EQ(test::registry_value(local.metrics_registry(),
                                 "ferry_rendezvous_chunks_pulled_total"),
            0);
  EXPECT_FALSE(client.detach(*h, got->lease_id)); // the payload stays
  // A consumer with --eager-max 0 asks the plain way and pulls its chunk.
  auto cfg = client_config();
  cfg.eager_max = 0;
  node plain{cfg};
  ASSERT_FALSE(plain.start());
  ASSERT_TRUE(plain.connect(scraped.endpoint()));
  blocking_client plain_client{plain};
  auto again = plain_client.get(*h);
  ASSERT_TRUE(again) << describe(again.error());
  EXPECT_EQ(again->bytes, got->bytes);
  text = test::scrape_metrics(scraped.metrics_port());
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_eager_answers_total"), 1);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_chunks_served_total"), 1);
  EXPECT_EQ(test::registry_value(plain.metrics_registry(),
                                 "ferry_rendezvous_chunks_pulled_total"),
            1);
  plain.stop();
}

TEST(ClusterFaults, OwnerKilledMidTransferFailsTheGetPromptly) {
  // The owner stops answering pulls from chunk 4 on, so the transfer is
  // certainly in flight when the owner dies.
  node_process owner_proc{{"--test-stall-pulls-from", "4"}};
  node_config cfg = client_config();
  cfg.request_timeout_ms = 60000; // the failure must come from the monitor
  node local{cfg};
  ASSERT_FALSE(local.start());
  auto hello = local.connect(owner_proc.endpoint());
  ASSERT_TRUE(hello);
  blocking_client client{local};
  auto mine = client.register_data(test::payload(16 * 512 * 1024));
  auto h = client.adopt(caf::actor_cast<gateway_actor>(hello->gateway), *mine);
  ASSERT_TRUE(h) << describe(h.error());
  auto pending = std::async(std::launch::async, [&] { return client.get(*h); });
  for (int i = 0; i < 1000; ++i) {
    if (test::registry_value(local.metrics_registry(),
                             "ferry_rendezvous_chunks_pulled_total")
        >= 4)
      break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(test::registry_value(local.metrics_registry(),
                                 "ferry_rendezvous_chunks_pulled_total"),
            4);
  owner_proc.kill(SIGKILL);
  // Well within the 60 s request timeout.
  ASSERT_EQ(pending.wait_for(20s), std::future_status::ready);
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::peer_down)) << describe(r.error());
}

namespace {

/// An owner process that stops answering pulls from chunk 4 on, holding a
/// 16-chunk payload, and an in-process node that staged it there.
struct StalledOwner {
  StalledOwner()
    : owner{{"--test-stall-pulls-from", "4", "--metrics-port", "0"}},
      local{client_config()},
      client{(start(), local)} {
    auto mine = client.register_data(test::payload(16 * 512 * 1024));
    auto h = client.adopt(gateway(), *mine);
    if (!h)
      throw std::runtime_error(describe(h.error()));
    handle = *h;
  }

  void start() {
    if (auto err = local.start())
      throw std::runtime_error(describe(err));
    auto hello = local.connect(owner.endpoint());
    if (!hello)
      throw std::runtime_error(describe(hello.error()));
    owner_gw = caf::actor_cast<gateway_actor>(hello->gateway);
  }

  gateway_actor gateway() const { return owner_gw; }

  nlohmann::json owner_stat() {
    auto text = client.stat(owner_gw);
    if (!text)
      throw std::runtime_error(describe(text.error()));
    return nlohmann::json::parse(*text)["owner"];
  }

  double owner_metric(const std::string& series) {
    return test::series_value(test::scrape_metrics(owner.metrics_port()), series);
  }

  /// Waits (bounded) until the owner has served the four chunks it serves.
  bool mid_pull() {
    for (int i = 0; i < 1000; ++i) {
      if (owner_metric("ferry_rendezvous_chunks_served_total") >= 4)
        return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  /// Waits up to `bound` for the owner to hold no lease and no transfer.
  bool owner_idle(std::chrono::milliseconds bound) {
    auto until = std::chrono::steady_clock::now() + bound;
    do {
      auto st = owner_stat();
      if (st["leases"] == 0 && st["transfers"] == 0)
        return true;
      std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }

  node_process owner;
  node local;
  gateway_actor owner_gw; // set by start(), before client is built
  blocking_client client;
  data_handle handle;
};

// The heartbeat timeout of a `ferry node` (connection-timeout-ms) plus 1 s.
constexpr auto lease_cleanup_bound = 3000ms;

} // namespace

TEST(ClusterFaults, AConsumerKilledMidPullLeavesNoLeaseOnTheOwner) {
  StalledOwner s;
  auto pid = test::start_ferry({"get", "--node", s.owner.endpoint(), "--handle",
                                to_string(s.handle), "-o", "/dev/null"});
  ASSERT_TRUE(s.mid_pull());
  auto st = s.owner_stat();
  EXPECT_EQ(st["leases"], 1);
  EXPECT_EQ(st["transfers"], 1);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(s.owner_idle(lease_cleanup_bound));
  EXPECT_EQ(s.owner_metric("ferry_rendezvous_leases_dropped_total{reason=\"peer_down\"}"), 1);
  EXPECT_EQ(s.owner_metric("ferry_rendezvous_leases"), 0);
  // The payload itself is not the dead consumer's: it stays staged.
  EXPECT_EQ(s.owner_stat()["slots"], 1);
}

TEST(ClusterFaults, AnOwnerResumedAfterItsConsumerGaveUpHoldsNothing) {
  StalledOwner s;
  auto pid = test::start_ferry({"get", "--node", s.owner.endpoint(), "--handle",
                                to_string(s.handle), "-o", "/dev/null",
                                "--request-timeout-ms", "1000"});
  ASSERT_TRUE(s.mid_pull());
  ASSERT_TRUE(s.owner.freeze());
  // The consumer gives up (its pulls time out) and exits while the owner
  // cannot hear it.
  int status = 0;
  for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(10ms);
  s.owner.thaw();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_TRUE(s.owner_idle(lease_cleanup_bound));
  EXPECT_EQ(s.owner_stat()["slots"], 1);
}

TEST(ClusterFaults, AChunkedLeaseIsHeldPastItsTransferDeadline) {
  node_process owner{{"--metrics-port", "0"}};
  node_config cfg = client_config();
  cfg.request_timeout_ms = 500;
  cfg.lease_timeout_ms = 200; // the transfer's lease: 1 s (twice the request bound)
  node local{cfg};
  ASSERT_FALSE(local.start());
  auto hello = local.connect(owner.endpoint());
  ASSERT_TRUE(hello) << describe(hello.error());
  blocking_client client{local};
  auto gw = caf::actor_cast<gateway_actor>(hello->gateway);
  auto bytes = test::payload(3 * 512 * 1024 + 5);
  auto mine = client.register_data(bytes);
  auto kept = client.adopt(gw, *mine);
  auto detached = client.adopt(gw, *client.register_data(bytes));
  ASSERT_TRUE(kept && detached);
  auto first = client.get(*kept);
  auto second = client.get(*detached);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->bytes, bytes);
  // Past the transfer's deadline with the bytes in hand: the leases stay.
  std::this_thread::sleep_for(2500ms);
  auto text = test::scrape_metrics(owner.metrics_port());
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_leases"), 2);
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_leases_expired_total"), 0);
  auto rel = client.release(*kept, first->lease_id);
  ASSERT_TRUE(rel) << describe(rel.error());
  EXPECT_TRUE(rel->freed);
  auto det = client.detach(*detached, second->lease_id);
  ASSERT_FALSE(det) << describe(det);
  auto md = client.metadata(*detached);
  ASSERT_TRUE(md) << describe(md.error());
  EXPECT_EQ(md->refcount, 1u);
}

TEST(ClusterFaults, ADeadPeerIsForgottenByTheGateway) {
  node_process a;
  node_process b{{"--join", a.endpoint()}};
  node local{client_config()};
  ASSERT_FALSE(local.start());
  auto hello = local.connect(a.endpoint());
  ASSERT_TRUE(hello);
  blocking_client client{local};
  auto gw = caf::actor_cast<gateway_actor>(hello->gateway);
  auto peer_ids = [&] {
    std::vector<uint64_t> ids;
    auto text = client.stat(gw);
    EXPECT_TRUE(text) << describe(text.error());
    if (text) {
      auto j = nlohmann::json::parse(*text);
      for (auto& p : j["peers"])
        ids.push_back(p["worker_id"].get<uint64_t>());
    }
    return ids;
  };
  // b joins in the background: wait for a to list it.
  std::vector<uint64_t> ids;
  for (int i = 0; i < 500; ++i) {
    ids = peer_ids();
    if (std::find(ids.begin(), ids.end(), b.worker_id()) != ids.end())
      break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(std::find(ids.begin(), ids.end(), b.worker_id()), ids.end());
  b.kill(SIGKILL);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    ids = peer_ids();
    gone = std::find(ids.begin(), ids.end(), b.worker_id()) == ids.end();
    if (!gone)
      std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(gone);
}

TEST(ClusterJob, ARemotelySpawnedWorkerServesANamedHandler) {
  node_process worker_node;
  node local{client_config()};
  ASSERT_FALSE(local.start());
  auto hello = local.connect(worker_node.endpoint());
  ASSERT_TRUE(hello);
  caf::scoped_actor self{local.system()};
  caf::actor worker;
  self
    ->request(caf::actor_cast<gateway_actor>(hello->gateway), 10s,
              spawn_atom::value, std::string{app::sort_worker_name},
              caf::make_message(std::string{"test.sort"}))
    .receive([&](caf::actor& w) { worker = w; },
             [&](caf::error& err) { FAIL() << describe(err); });
  ASSERT_TRUE(worker);
  // An unknown worker type, or a worker without its name, is a clear error.
  self
    ->request(caf::actor_cast<gateway_actor>(hello->gateway), 10s,
              spawn_atom::value, std::string{"no_such_worker"}, caf::make_message())
    .receive([&](caf::actor&) { FAIL() << "spawned an unknown type"; },
             [&](caf::error& err) {
               EXPECT_TRUE(is(err, errc::unknown_worker_type)) << describe(err);
             });
  self
    ->request(caf::actor_cast<gateway_actor>(hello->gateway), 10s,
              spawn_atom::value, std::string{app::sort_worker_name}, caf::make_message())
    .receive([&](caf::actor&) { FAIL() << "spawned a worker with no name"; },
             [&](caf::error& err) {
               EXPECT_TRUE(is(err, errc::invalid_argument)) << describe(err);
             });
  // A 3 MiB shard goes by handle both ways; the handler saw plain bytes.
  auto shard = app::make_shard(7, 0, 3 * 1024 * 1024);
  auto expected = shard;
  auto stats = app::sort_shard(expected);
  messenger_client m{local};
  auto reply = m.call(hello->worker_id, "test.sort", shard, {{"shard", "0"}}, 60s);
  ASSERT_TRUE(reply) << describe(reply.error());
  auto got = app::take_stats(reply->hdrs);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->sum, stats.sum);
  EXPECT_EQ(got->histogram, stats.histogram);
  EXPECT_EQ(reply->payload, expected);
  EXPECT_EQ(reply->hdrs["shard"], "0");
  // Both staged copies are gone (single use).
  EXPECT_EQ(test::registry_value(local.metrics_registry(), "ferry_rendezvous_slots"), 0);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}
