// The RDMA path between real processes, over UCX_TLS=tcp and over shared
// memory: the path taken (scraped from the owner's HTTP endpoint and read
// from this node's registry), every refusal reason, the kill switch on each
// side, fallbacks from fault hooks, leases under a dead or slow consumer.
#include <gtest/gtest.h>

#include <time.h>

#include <future>

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/rendezvous/path_metrics.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "protocol/rdma_descriptor.hpp"
#include "protocol/rv_messages.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/builtin_handlers.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"
#include "tests/rdma/engine_stat.hpp"
#include "tests/rdma/ucx_transports.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using test::eventually;
using test::node_process;

namespace {

constexpr uint64_t MiB_ = 1024 * 1024;

std::string series(const char* path, const char* reason) {
  return std::string{"ferry_rendezvous_rdma_path_total{path=\""} + path
         + "\",reason=\"" + reason + "\"}";
}

/// One `ferry node` owner process and one in-process consumer node, both on
/// the transport under test.
struct Rdma : ::testing::TestWithParam<std::string> {
  void SetUp() override {
    setenv("UCX_TLS", test::ucx_tls_for(GetParam()).c_str(), 1);
    test::allow_emulated_gets_for(GetParam());
    setenv("UCX_NET_DEVICES", "lo", 1);
  }

  /// The consumer's calls took this run's channel: the control channel
  /// where its owner serves it, CAF requests in the caf_channel: reruns.
  void TearDown() override {
    if (local && ((local->has_ucx() && owner_serves_channel) || !test::control_channel_on())) {
      EXPECT_EQ(test::calls_by_other_channel(local->metrics_registry()), 0);
    }
  }

  void start(std::vector<std::string> owner_args = {},
             std::vector<std::string> owner_env = {},
             node_config local_cfg = consumer_config()) {
    for (const auto& a : owner_args) // no UCX, or a worker that must not progress
      if (a == "--ucx" || a == "--test-stall-ucx" || a == "--test-serve-delay-ms")
        owner_serves_channel = false;
    owner_args.push_back("--metrics-port");
    owner_args.push_back("0");
    owner_env.push_back("UCX_TLS=" + test::ucx_tls_for(GetParam()));
    owner = std::make_unique<node_process>(owner_args, owner_env);
    local = std::make_unique<node>(local_cfg);
    ASSERT_FALSE(local->start());
    auto hello = local->connect(owner->endpoint());
    ASSERT_TRUE(hello) << describe(hello.error());
    owner_hello = *hello;
    client = std::make_unique<blocking_client>(*local);
  }

  static node_config consumer_config() {
    node_config c;
    c.listen = false;
    c.request_timeout_ms = 30000;
    return c;
  }

  /// Stages bytes on the owner process (pinned or plain) through adopt.
  data_handle stage(const byte_buffer& bytes, bool pinned = true) {
    auto mine = client->register_data(bytes);
    EXPECT_TRUE(mine);
    auto h = client->adopt(caf::actor_cast<gateway_actor>(owner_hello.gateway),
                           *mine, pinned);
    EXPECT_TRUE(h) << describe(h.error());
    return *h;
  }

  /// Gets `h`, checks the bytes, releases.
  void get_and_check(const data_handle& h, const byte_buffer& want) {
    auto got = client->get(h);
    ASSERT_TRUE(got) << describe(got.error());
    EXPECT_EQ(got->bytes.size(), want.size());
    EXPECT_EQ(checksum64(got->bytes.data(), got->bytes.size()),
              checksum64(want.data(), want.size()));
    ASSERT_TRUE(client->release(h, got->lease_id));
  }

  double owner_count(const char* path, const char* reason) {
    auto v = test::series_value(test::scrape_metrics(owner->metrics_port()),
                                series(path, reason));
    return v < 0 ? 0 : v;
  }

  double local_count(transfer_path path, path_reason reason) {
    return local->paths().value(path, reason);
  }

  nlohmann::json owner_stat() {
    auto text = client->stat(caf::actor_cast<gateway_actor>(owner_hello.gateway));
    EXPECT_TRUE(text);
    return nlohmann::json::parse(*text);
  }

  std::unique_ptr<node_process> owner;
  std::unique_ptr<node> local;
  std::unique_ptr<blocking_client> client;
  peer_hello owner_hello;
  bool owner_serves_channel = true;
};

/// A raw _rv_acquire to the owner process.
caf::expected<rv_acquire_response> raw_acquire(node& n, const peer_hello& owner,
                                               const rv_acquire_request& req) {
  caf::scoped_actor self{n.system()};
  caf::expected<rv_acquire_response> result = make_error(errc::timeout);
  self
    ->request(caf::actor_cast<owner_actor>(owner.owner), 10s,
              rv_acquire_atom::value, encode(req))
    .receive(
      [&](std::string& body) {
        auto r = decode<rv_acquire_response>(body);
        if (r)
          result = *r;
        else
          result = r.error();
      },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Transports, Rdma, ::testing::Values("tcp", "sm"),
                         [](const auto& info) { return info.param; });

TEST_P(Rdma, PinnedSlotTakesTheRdmaPath) {
  start();
  ASSERT_TRUE(local->has_ucx());
  for (auto n : {size_t{64 * 1024}, size_t{4 * MiB_ + 3}, size_t{16 * MiB_}}) {
    auto bytes = test::payload(n, n);
    auto h = stage(bytes);
    get_and_check(h, bytes);
  }
  EXPECT_EQ(owner_count("rdma", "ok"), 3);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 3);
  EXPECT_EQ(test::registry_value(local->metrics_registry(),
                                 "ferry_rendezvous_chunks_pulled_total"),
            // only the adopt pulls went by chunks (the owner pulled from us)
            0);
  EXPECT_EQ(owner_stat()["owner"]["slots"], 0);
  auto text = test::scrape_metrics(owner->metrics_port());
  EXPECT_GT(test::series_value(text, "ferry_rdma_registered_bytes"), 0);
  EXPECT_GE(test::series_value(text, R"(ferry_rdma_registrations_total{kind="arena"})"), 1);
}

TEST_P(Rdma, GetIntoACallerBufferOverRdma) {
  start();
  auto bytes = test::payload(3 * MiB_);
  auto h = stage(bytes);
  byte_buffer dest(bytes.size());
  auto r = client->get_into(h, dest.data(), dest.size());
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(dest, bytes);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
  ASSERT_TRUE(client->release(h, r->second));
}

TEST_P(Rdma, RefusalReasonsAreCountedOnTheOwner) {
  start();
  auto big = test::payload(1 * MiB_);
  // not_pinned: a plain slot.
  auto plain = stage(big, false);
  get_and_check(plain, big);
  EXPECT_EQ(owner_count("chunked", "not_pinned"), 1);
  // below_min: a pinned slot under 64 KiB.
  auto small = test::payload(4096);
  auto tiny = stage(small);
  get_and_check(tiny, small);
  EXPECT_EQ(owner_count("chunked", "below_min"), 1);
  // no_offer: an old consumer (no rdma field) reads a pinned slot by chunks.
  auto pinned = stage(big);
  rv_acquire_request old_consumer;
  old_consumer.handle = pinned;
  auto r = raw_acquire(*local, owner_hello, old_consumer);
  ASSERT_TRUE(r) << describe(r.error());
  ASSERT_TRUE(r->ready);
  EXPECT_EQ(r->ready->total_len, big.size());
  EXPECT_EQ(owner_count("chunked", "no_offer"), 1);
  ASSERT_FALSE(client->detach(pinned, r->ready->lease_id));
  // no_offer: an offer for a backend this owner does not serve.
  rv_acquire_request verbs;
  verbs.handle = pinned;
  verbs.rdma = rdma_offer{{"verbs"}};
  r = raw_acquire(*local, owner_hello, verbs);
  ASSERT_TRUE(r && r->ready);
  EXPECT_EQ(owner_count("chunked", "no_offer"), 2);
  ASSERT_FALSE(client->detach(pinned, r->ready->lease_id));
  get_and_check(pinned, big);
  EXPECT_EQ(owner_count("rdma", "ok"), 1);
}

TEST_P(Rdma, OwnerWithoutUcxCountsNotConfigured) {
  start({"--ucx", "false"});
  auto big = test::payload(1 * MiB_);
  auto h = stage(big); // pinned asked, plain given: no UCX there
  EXPECT_EQ(owner_stat()["capabilities"].size(), 1u);
  // (Both roles count into the series: the owner process's own consumer
  // counted its offer decision during the adopt. Compare deltas.)
  auto before = owner_count("chunked", "not_configured");
  rv_acquire_request req;
  req.handle = h;
  req.rdma = rdma_offer{{"ucx"}};
  auto r = raw_acquire(*local, owner_hello, req);
  ASSERT_TRUE(r && r->ready);
  EXPECT_EQ(owner_count("chunked", "not_configured"), before + 1);
  ASSERT_FALSE(client->detach(h, r->ready->lease_id));
  // Our consumer sees a peer without UCX and offers nothing.
  auto local_before = local_count(transfer_path::chunked, path_reason::no_offer);
  get_and_check(h, big);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::no_offer),
            local_before + 1);
}

TEST_P(Rdma, KillSwitchOnTheOwnerAloneTurnsThePathOff) {
  start({}, {"FERRY_RDMA_RENDEZVOUS_DISABLE=yes"});
  auto big = test::payload(1 * MiB_);
  // The owner process counts kill_switch as a consumer (its adopt pull
  // offers nothing), at staging (pinned falls back to plain) and at each
  // acquire.
  auto h = stage(big);
  EXPECT_EQ(owner_count("chunked", "kill_switch"), 2);
  get_and_check(h, big);
  EXPECT_EQ(owner_count("chunked", "kill_switch"), 3);
  EXPECT_EQ(owner_count("rdma", "ok"), 0);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 0);
}

TEST_P(Rdma, KillSwitchOnTheConsumerAloneTurnsThePathOff) {
  setenv("FERRY_RDMA_RENDEZVOUS_DISABLE", "ON", 1);
  start();
  unsetenv("FERRY_RDMA_RENDEZVOUS_DISABLE");
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  auto before = local_count(transfer_path::chunked, path_reason::kill_switch);
  get_and_check(h, big);
  // Our consumer offered nothing (kill_switch); the owner saw no offer.
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::kill_switch),
            before + 1);
  EXPECT_EQ(owner_count("chunked", "no_offer"), 1);
  EXPECT_EQ(owner_count("rdma", "ok"), 0);
}

TEST_P(Rdma, SpentBudgetStagesInPlainMemory) {
  start({"--registered-bytes-budget", "0"});
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  EXPECT_EQ(owner_count("chunked", "budget"), 1);
  get_and_check(h, big);
  EXPECT_EQ(owner_count("chunked", "not_pinned"), 1);
}

TEST_P(Rdma, NoDestinationBufferFallsBackOnce) {
  auto cfg = consumer_config();
  cfg.registered_bytes_budget = 4096;
  cfg.gets_into_result = false; // a registered destination, as on a NIC
  start({}, {}, cfg);
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  get_and_check(h, big);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::pool_exhausted), 1);
  EXPECT_EQ(owner_count("rdma", "ok"), 1);
  EXPECT_EQ(owner_count("chunked", "no_offer"), 1); // the fallback acquire
}

TEST_P(Rdma, FailedGetFallsBackOnce) {
  auto cfg = consumer_config();
  cfg.test_fail_gets = true;
  start({}, {}, cfg);
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  get_and_check(h, big);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::get_failed), 1);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 0);
  EXPECT_EQ(owner_count("chunked", "no_offer"), 1);
  EXPECT_EQ(owner_stat()["owner"]["leases"], 0);
}

/// A pair over tcp alone whose nodes keep the default: no GET that UCX
/// could only emulate (rdma/one_sided_reads.hpp). Its gets take the chunked
/// path, which is faster there and cannot abort the owner.
class EmulatedGets : public Rdma {
  void SetUp() override {
    Rdma::SetUp();
    ::unsetenv("FERRY_RDMA_EMULATED_GETS");
  }
};

INSTANTIATE_TEST_SUITE_P(TcpPair, EmulatedGets, ::testing::Values("tcp"),
                         [](const auto& info) { return info.param; });

TEST_P(EmulatedGets, APinnedGetOfATcpPairTakesTheChunkedPathWithoutAnOffer) {
  start();
  ASSERT_TRUE(local->has_ucx());
  auto bytes = test::payload(4 * MiB_ + 3, 41);
  auto h = stage(bytes); // the owner's adopt pull counts on both nodes too
  auto local_before = local_count(transfer_path::chunked, path_reason::no_offer);
  auto owner_before = owner_count("chunked", "no_offer");
  get_and_check(h, bytes);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::no_offer) - local_before, 1);
  EXPECT_EQ(owner_count("chunked", "no_offer") - owner_before, 1);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 0);
  EXPECT_EQ(owner_count("rdma", "ok"), 0);
  EXPECT_EQ(owner_stat()["owner"]["leases"], 0);
}

TEST_P(EmulatedGets, AnOwnerThatTakesNoneAnswersAnOfferWithChunks) {
  auto cfg = consumer_config();
  cfg.rdma_emulated_gets = true; // this side would, the owner would not
  start({}, {}, cfg);
  auto bytes = test::payload(1 * MiB_, 42);
  auto h = stage(bytes);
  auto local_before = local_count(transfer_path::chunked, path_reason::no_offer);
  auto owner_before = owner_count("chunked", "no_offer");
  get_and_check(h, bytes);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::no_offer), local_before)
    << "the consumer offered";
  EXPECT_EQ(owner_count("chunked", "no_offer") - owner_before, 1)
    << "the owner took it for none";
  EXPECT_EQ(owner_count("rdma", "ok"), 0);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 0);
}

TEST_P(EmulatedGets, NodesThatBothAllowThemTakeTheRdmaPath) {
  auto cfg = consumer_config();
  cfg.rdma_emulated_gets = true;
  start({"--rdma-emulated-gets", "true"}, {}, cfg);
  auto bytes = test::payload(1 * MiB_, 43);
  auto h = stage(bytes);
  auto local_before = local_count(transfer_path::chunked, path_reason::no_offer);
  get_and_check(h, bytes);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
  EXPECT_EQ(owner_count("rdma", "ok"), 1);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::no_offer), local_before);
}

class RdmaFault : public Rdma {};

INSTANTIATE_TEST_SUITE_P(
  Faults, RdmaFault,
  ::testing::Values("unknown_backend", "truncated", "trailing_byte",
                    "lying_key_length"),
  [](const auto& info) { return info.param; });

TEST_P(RdmaFault, BrokenDescriptorFallsBackExactlyOnce) {
  setenv("UCX_TLS", "sm,self", 1);
  setenv("UCX_NET_DEVICES", "lo", 1);
  owner = std::make_unique<node_process>(
    std::vector<std::string>{"--metrics-port", "0", "--test-descriptor-fault",
                             GetParam()},
    std::vector<std::string>{"UCX_TLS=sm,self"});
  local = std::make_unique<node>(consumer_config());
  ASSERT_FALSE(local->start());
  owner_hello = *local->connect(owner->endpoint());
  client = std::make_unique<blocking_client>(*local);
  auto big = test::payload(1 * MiB_ + 5);
  auto h = stage(big);
  get_and_check(h, big);
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::decode_error), 1);
  EXPECT_EQ(owner_count("rdma", "ok"), 1);       // one descriptor sent
  EXPECT_EQ(owner_count("chunked", "no_offer"), 1); // one fallback acquire
  EXPECT_EQ(owner_stat()["owner"]["leases"], 0);
}

TEST_P(Rdma, SlowGetSurvivesSeveralDeadlinesByRenewal) {
  auto cfg = consumer_config();
  cfg.test_get_delay_ms = 1000; // five deadlines
  start({"--lease-timeout-ms", "200"}, {}, cfg);
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  get_and_check(h, big);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
  auto text = test::scrape_metrics(owner->metrics_port());
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_rdma_leases_reaped_total"), 0);
}

TEST_P(Rdma, AFinishedGetsLeaseIsHeldPastTheLeaseTimeout) {
  start({"--lease-timeout-ms", "200"});
  auto big = test::payload(1 * MiB_);
  auto kept = stage(big);
  auto detached = stage(big);
  auto first = client->get(kept);
  auto second = client->get(detached);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 2);
  // Five lease timeouts with the bytes in hand: nothing reaps the leases.
  std::this_thread::sleep_for(1000ms);
  EXPECT_EQ(owner_stat()["owner"]["leases"], 2);
  EXPECT_EQ(test::series_value(test::scrape_metrics(owner->metrics_port()),
                               "ferry_rendezvous_rdma_leases_reaped_total"),
            0);
  auto rel = client->release(kept, first->lease_id);
  ASSERT_TRUE(rel) << describe(rel.error());
  EXPECT_TRUE(rel->freed);
  // detach keeps the reference: the slot stays, with refcount 1.
  auto det = client->detach(detached, second->lease_id);
  ASSERT_FALSE(det) << describe(det);
  auto md = client->metadata(detached);
  ASSERT_TRUE(md) << describe(md.error());
  EXPECT_EQ(md->refcount, 1u);
  get_and_check(detached, big);
  EXPECT_EQ(owner_stat()["owner"]["slots"], 0);
}

namespace {

/// The local UCX engine's stat (gets in flight, abandoned, warm state).
nlohmann::json engine_stat(node& n) { return test::engine_stat(n, 10s); }

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

} // namespace

TEST_P(Rdma, AGetToAnOwnerThatDiedIsAbandonedAndCostsNoCpu) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "over shared memory the GET reads one-sidedly and completes";
  start({"--test-stall-ucx"}); // the owner never serves the GET
  auto big = test::payload(4 * MiB_);
  auto h = stage(big);
  auto pending = std::async(std::launch::async, [&] { return client->get(h); });
  ASSERT_TRUE(eventually([&] { return engine_stat(*local)["gets_in_flight"] == 1; }));
  owner->kill(SIGKILL);
  ASSERT_EQ(pending.wait_for(20s), std::future_status::ready);
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::peer_down)) << describe(r.error());
  // The gateway tells the engine the peer went: its GET is given up (kept
  // as abandoned while UCX holds it; over tcp UCX may also fail it once the
  // dead peer refuses the connection).
  ASSERT_TRUE(eventually([&] { return engine_stat(*local)["gets_in_flight"] == 0; }));
  auto abandoned = engine_stat(*local)["gets_abandoned"].get<int>();
  EXPECT_LE(abandoned, 1);
  EXPECT_EQ(test::registry_value(local->metrics_registry(), "ferry_ucx_abandoned_gets"),
            abandoned);
  // Nothing of it is polled more than now and then.
  auto before = cpu_seconds();
  std::this_thread::sleep_for(2s);
  auto used = cpu_seconds() - before;
  EXPECT_LT(used, 0.4) << "the consumer node used " << used << " s of CPU in 2 s";
}

TEST_P(Rdma, AGetPastItsDeadlineIsAbandonedAndTheGetFallsBack) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "over shared memory the GET reads one-sidedly and completes";
  auto cfg = consumer_config();
  cfg.transfer_timeout_ms = 1000; // one GET's bound
  start({"--test-stall-ucx"}, {}, cfg);
  auto big = test::payload(2 * MiB_);
  auto h = stage(big);
  get_and_check(h, big); // by chunks, after the GET is given up
  EXPECT_EQ(local_count(transfer_path::chunked, path_reason::get_failed), 1);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 0);
  EXPECT_EQ(test::registry_value(local->metrics_registry(), "ferry_ucx_abandoned_gets"),
            1);
  EXPECT_EQ(owner_stat()["owner"]["leases"], 0);
  // The abandoned GET never finishes (the owner never serves it): it is
  // looked at now and then, never spun on.
  auto before = cpu_seconds();
  std::this_thread::sleep_for(2s);
  auto used = cpu_seconds() - before;
  EXPECT_LT(used, 0.4) << "the consumer node used " << used << " s of CPU in 2 s";
  EXPECT_EQ(engine_stat(*local)["gets_abandoned"], 1);
}

/// How many rounds the quarantine test runs (FERRY_QUARANTINE_ROUNDS; CI's
/// default is short, docs/reliability.md has the long run).
int quarantine_rounds() {
  const char* env = std::getenv("FERRY_QUARANTINE_ROUNDS");
  int n = env ? std::atoi(env) : 0;
  return n > 0 ? n : 12;
}

TEST_P(Rdma, AGetGivenUpNeverReadsABlockReusedForAnotherPayload) {
  // The owner serves peers' GETs only 500 ms after each new descriptor; the
  // consumer gives a GET up after 100 ms (over tcp the GET is emulated and
  // waits for the owner; over shared memory it reads one-sidedly and does
  // not wait). A given-up GET's request stays queued in the owner's worker
  // and is served later. Each round frees the payload it was reading and
  // stages another of the same size at once: the quarantine must keep the
  // first block out of reuse until the consumer's engine says the GET
  // ended (a fence), so the late GET reads the bytes it was granted, never
  // the next payload's; every get still delivers its own bytes (by chunks).
  auto cfg = consumer_config();
  cfg.transfer_timeout_ms = 100; // one GET's bound
  start({"--test-serve-delay-ms", "500"}, {}, cfg);
  auto address_range = [&](const data_handle& h) {
    rv_acquire_request req;
    req.handle = h;
    req.rdma = rdma_offer{{"ucx"}};
    auto r = raw_acquire(*local, owner_hello, req);
    EXPECT_TRUE(r && r->rdma);
    if (!r || !r->rdma)
      return std::pair<uint64_t, uint64_t>{0, 0};
    auto d = decode_descriptor(r->rdma->descriptor.data(), r->rdma->descriptor.size());
    EXPECT_TRUE(d);
    EXPECT_FALSE(client->detach(h, r->rdma->lease_id)); // no GET was posted
    return d ? std::pair<uint64_t, uint64_t>{d.descriptor->addr, d.descriptor->addr + d.descriptor->len}
             : std::pair<uint64_t, uint64_t>{0, 0};
  };
  const int rounds = quarantine_rounds();
  int given_up = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto first = test::payload(1 * MiB_, 2 * round + 1);
    auto a = stage(first);
    auto a_range = address_range(a);
    auto before = local_count(transfer_path::chunked, path_reason::get_failed);
    auto got = client->get(a);
    ASSERT_TRUE(got) << describe(got.error());
    EXPECT_EQ(checksum64(got->bytes.data(), got->bytes.size()),
              checksum64(first.data(), first.size()));
    bool abandoned = local_count(transfer_path::chunked, path_reason::get_failed) > before;
    given_up += abandoned ? 1 : 0;
    ASSERT_TRUE(client->release(a, got->lease_id)); // the slot goes
    // The next payload, the same size, staged while that GET may run.
    auto second = test::payload(1 * MiB_, 2 * round + 2);
    auto b = stage(second);
    auto b_range = address_range(b);
    if (abandoned)
      EXPECT_TRUE(b_range.second <= a_range.first || a_range.second <= b_range.first)
        << "the given-up GET's block [" << a_range.first << ", " << a_range.second
        << ") was reused at once for [" << b_range.first << ", " << b_range.second << ")";
    get_and_check(b, second);
    // The late GETs are served, their fences answer, the blocks go back.
    ASSERT_TRUE(
      eventually([&] { return owner_stat()["owner"]["quarantine"]["blocks"] == 0; }, 20s))
      << owner_stat().dump() << "\nthis node's engine: " << engine_stat(*local).dump();
  }
  if (GetParam() == "tcp")
    EXPECT_GE(given_up, rounds) << "every first GET waits past its bound over tcp";
  // Every block a given-up GET could read went back once its fence answered:
  // none was forced, and the owner serves on.
  auto metrics = test::scrape_metrics(owner->metrics_port());
  auto released = [&](const char* by) {
    return test::series_value(
      metrics, std::string{"ferry_rdma_quarantine_released_total{cleared_by=\""} + by + "\"}");
  };
  auto fallbacks = local_count(transfer_path::chunked, path_reason::get_failed);
  EXPECT_EQ(released("fence"), fallbacks);
  EXPECT_EQ(released("forced"), 0);
  EXPECT_EQ(released("peer_down"), 0);
  EXPECT_EQ(test::series_value(metrics, "ferry_rdma_quarantined_bytes"), 0);
  EXPECT_EQ(owner_stat()["owner"]["leases"], 0);
  EXPECT_EQ(owner_stat()["owner"]["slots"], 0);
}

/// The owner's quarantine figures, read off its /metrics.
struct quarantine_figures {
  double fence = 0, peer_down = 0, forced = 0, bytes = 0;
};

quarantine_figures quarantine_of(const node_process& owner) {
  auto text = test::scrape_metrics(owner.metrics_port());
  auto released = [&](const char* by) {
    return test::series_value(
      text, std::string{"ferry_rdma_quarantine_released_total{cleared_by=\""} + by + "\"}");
  };
  return {released("fence"), released("peer_down"), released("forced"),
          test::series_value(text, "ferry_rdma_quarantined_bytes")};
}

TEST_P(Rdma, AQuarantinedBlockWhosePeerWentIsLetGoAfterTheGrace) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "over shared memory the GET reads one-sidedly and completes";
  auto cfg = consumer_config();
  cfg.transfer_timeout_ms = 200; // one GET's bound
  start({"--test-stall-ucx"}, {}, cfg); // the owner never serves the GET
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  auto got = client->get(h); // the GET is given up, the chunks deliver
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(got->bytes, big);
  ASSERT_TRUE(client->release(h, got->lease_id));
  EXPECT_EQ(quarantine_of(*owner).bytes, static_cast<double>(big.size()));
  // The fence cannot answer while our GET waits on the stalled owner; our
  // node goes, and the owner lets the block go after_down (1 s) later.
  client.reset();
  local->stop();
  ASSERT_TRUE(eventually([&] { return quarantine_of(*owner).peer_down == 1; }, 10s));
  auto q = quarantine_of(*owner);
  EXPECT_EQ(q.bytes, 0);
  EXPECT_EQ(q.fence, 0);
  EXPECT_EQ(q.forced, 0);
}

TEST_P(Rdma, AnOwnerToldToStopWhileABlockWaitsOutItsGraceStopsWithoutItsDeadline) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "over shared memory the GET reads one-sidedly and completes";
  auto cfg = consumer_config();
  cfg.transfer_timeout_ms = 200; // one GET's bound
  // The owner never serves a GET, gives up its own after 200 ms, and its
  // deadline is past node_process::stop's 15 s wait: an owner that waited
  // it out would be killed.
  start({"--test-stall-ucx", "--transfer-timeout-ms", "200", "--shutdown-timeout-ms", "30000"},
        {}, cfg);
  // The owner's echo of 2 MiB is registered where it lies (an external
  // region); our GET of it is given up and the chunks deliver it; once we
  // let it go, the block waits in the owner's quarantine.
  auto big = test::payload(2 * MiB_, 7);
  messenger_client m{*local};
  auto echo = m.call(owner_hello.worker_id, echo_handler, big, {}, 30s);
  ASSERT_TRUE(echo) << describe(echo.error());
  EXPECT_EQ(echo->payload, big);
  ASSERT_TRUE(eventually([&] { return quarantine_of(*owner).bytes == big.size(); }, 10s))
    << quarantine_of(*owner).bytes;
  // Our node goes, and the owner's is told to stop at once, within the
  // block's grace (1 s after its holder's node went): with its lease
  // reaper gone, the drain must still let the block go, or the region's
  // sweep waits for it until the deadline.
  client.reset();
  local->stop();
  auto status = owner->stop();
  auto log = owner->log();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n"
                                                              << log;
  EXPECT_EQ(log.find("after the drain budget"), std::string::npos) << log;
}

TEST_P(Rdma, AQuarantinedBlockWithoutAFenceGoesAfterTheLongestHold) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "over shared memory the GET reads one-sidedly and completes";
  auto cfg = consumer_config();
  cfg.transfer_timeout_ms = 200; // one GET's bound
  // The owner never serves the GET, so our engine's fence never answers.
  // With eager endpoints the owner made its own endpoint to us at the
  // hello, which UCX pairs with ours: that one the forced path closes.
  start({"--test-stall-ucx", "--rdma-quarantine-max-ms", "1500", "--eager-endpoints", "true"},
        {}, cfg);
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  auto got = client->get(h);
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(got->bytes, big);
  ASSERT_TRUE(client->release(h, got->lease_id));
  EXPECT_EQ(quarantine_of(*owner).bytes, static_cast<double>(big.size()));
  EXPECT_TRUE(eventually([&] { return engine_stat(*local)["fences_waiting"] == 1; }));
  ASSERT_TRUE(eventually([&] { return quarantine_of(*owner).forced == 1; }, 10s));
  EXPECT_EQ(quarantine_of(*owner).bytes, 0);
  EXPECT_EQ(test::series_value(test::scrape_metrics(owner->metrics_port()),
                               "ferry_ucx_endpoints_closed_total{reason=\"quarantine\"}"),
            1);
  EXPECT_EQ(owner_stat()["owner"]["quarantine"]["blocks"], 0);
  // The owner goes on serving (by chunks: its UCX stays stalled).
  auto next = test::payload(1 * MiB_, 9);
  get_and_check(stage(next), next);
}

TEST_P(Rdma, APinnedRegisterOfHalfAGibiByteDoesNotHoldUpLeaseRenewals) {
  if (GetParam() != "tcp")
    GTEST_SKIP() << "one transport is enough: the copy is the same on all";
  // The consumer node has one scheduler thread. While its slow GET holds an
  // RDMA lease (renewed every 100 ms), the same node stages 512 MiB in
  // registered memory: a copy on that thread would starve the renewals and
  // the owner would reap the lease.
  auto cfg = consumer_config();
  cfg.scheduler_threads = 1;
  cfg.test_get_delay_ms = 1500;
  start({"--lease-timeout-ms", "200"}, {}, cfg);
  auto small = test::payload(1 * MiB_);
  auto h = stage(small);
  auto pending = std::async(std::launch::async, [&] { return client->get(h); });
  ASSERT_TRUE(eventually([&] { return owner_count("rdma", "ok") == 1; }));
  byte_buffer big(512 * MiB_, 'x');
  auto staged = client->register_data_pinned(std::move(big));
  ASSERT_TRUE(staged) << describe(staged.error());
  auto got = pending.get();
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(got->bytes, small);
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
  EXPECT_EQ(test::series_value(test::scrape_metrics(owner->metrics_port()),
                               "ferry_rendezvous_rdma_leases_reaped_total"),
            0);
  auto md = client->metadata(*staged);
  ASSERT_TRUE(md);
  EXPECT_TRUE(md->pinned);
  ASSERT_TRUE(client->release(h, got->lease_id));
}

namespace {

/// A `ferry get` whose GET completes only after 30 s: it holds its RDMA
/// lease by renewals until the test stops or kills it.
/// A `ferry get` whose GET reply its engine holds for 30 s; its log (debug)
/// goes to `log`.
pid_t start_slow_get(const std::string& endpoint, const data_handle& h,
                     const std::string& transport, std::string* log = nullptr) {
  return test::start_ferry({"get", "--node", endpoint, "--handle", to_string(h),
                            "-o", "/dev/null", "--test-get-delay-ms", "30000",
                            "--log-level", "debug"},
                           {"UCX_TLS=" + test::ucx_tls_for(transport)}, log);
}

/// True once the file's text contains `what`.
bool file_says(const std::string& path, const std::string& what) {
  std::ifstream in{path};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  return text.find(what) != std::string::npos;
}

} // namespace

TEST_P(Rdma, ConsumerKilledMidGetLosesItsLeaseWithItsNode) {
  start({"--lease-timeout-ms", "5000"});
  auto big = test::payload(2 * MiB_);
  auto h = stage(big);
  std::string log;
  auto pid = start_slow_get(owner->endpoint(), h, GetParam(), &log);
  ASSERT_TRUE(eventually([&] { return owner_count("rdma", "ok") == 1; }));
  EXPECT_EQ(owner_stat()["owner"]["leases"], 1);
  // Killed once UCX finished the GET (its reply held): a consumer killed
  // while UCX 1.13 still wires up its endpoint over tcp can crash the owner
  // in UCX itself (docs/known-issues.md), which no wait of ferry's avoids.
  ASSERT_TRUE(eventually([&] { return file_says(log, "UCX finished it"); }));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // The owner sees the node go (its connection drops) and ends its lease at
  // once, long before the 5 s deadline could.
  double dropped = 0;
  for (int i = 0; i < 150 && dropped < 1; ++i) {
    std::this_thread::sleep_for(20ms);
    dropped = test::series_value(test::scrape_metrics(owner->metrics_port()),
                                 "ferry_rendezvous_leases_dropped_total{reason=\"peer_down\"}");
  }
  ASSERT_EQ(dropped, 1) << owner->log();
  auto stat = owner_stat();
  EXPECT_EQ(stat["owner"]["leases"], 0);
  EXPECT_EQ(stat["owner"]["transfers"], 0);
  // Ending a lease is not a release: the reference stays with the handle.
  EXPECT_EQ(stat["owner"]["slots"], 1);
  EXPECT_EQ(test::series_value(test::scrape_metrics(owner->metrics_port()),
                               "ferry_rendezvous_rdma_leases_reaped_total"),
            0);
}

TEST_P(Rdma, ConsumerStoppedMidGetIsReapedByTheOwner) {
  start({"--lease-timeout-ms", "200"});
  auto big = test::payload(2 * MiB_);
  auto h = stage(big);
  auto pid = start_slow_get(owner->endpoint(), h, GetParam());
  ASSERT_TRUE(eventually([&] { return owner_count("rdma", "ok") == 1; }));
  std::this_thread::sleep_for(600ms); // three deadlines, kept alive by renewals
  EXPECT_EQ(owner_stat()["owner"]["leases"], 1);
  // A hung consumer (its node still connected) stops renewing: the reaper
  // force-releases the lease before the heartbeat timeout drops the node.
  EXPECT_TRUE(test::freeze_process(pid));
  double reaped = 0;
  for (int i = 0; i < 200 && reaped < 1; ++i) {
    std::this_thread::sleep_for(20ms);
    reaped = test::series_value(test::scrape_metrics(owner->metrics_port()),
                                "ferry_rendezvous_rdma_leases_reaped_total");
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(reaped, 1);
  auto stat = owner_stat();
  EXPECT_EQ(stat["owner"]["leases"], 0);
  // A force-release drops the lease's reference too: the slot is freed.
  EXPECT_EQ(stat["owner"]["slots"], 0);
}

TEST_P(Rdma, ADroppedCallerKeepsItsDestinationReservedUntilTheGetCompletes) {
  auto cfg = consumer_config();
  cfg.test_get_delay_ms = 800;
  start({}, {}, cfg);
  auto big = test::payload(1 * MiB_);
  auto h = stage(big);
  rv_acquire_request req;
  req.handle = h;
  req.rdma = rdma_offer{{"ucx"}};
  auto r = raw_acquire(*local, owner_hello, req);
  ASSERT_TRUE(r && r->rdma);
  auto d = decode_descriptor(r->rdma->descriptor.data(), r->rdma->descriptor.size());
  ASSERT_TRUE(d);
  caf::scoped_actor self{local->system()};
  auto pool_blocks = [&] {
    uint64_t n = 0;
    self->request(local->arena_pool(), 5s, stat_atom::value)
      .receive([&](std::string& s) { n = nlohmann::json::parse(s)["blocks"]; },
               [](caf::error&) {});
    return n;
  };
  pinned_ptr dest;
  self->request(local->arena_pool(), 5s, pool_alloc_atom::value, d.descriptor->len, true)
    .receive([&](pinned_ptr& b) { dest = b; }, [](caf::error&) {});
  ASSERT_TRUE(dest);
  // The caller gives up after 50 ms and drops its reference to the block.
  bool gave_up = false;
  self
    ->request(local->ucx_engine().actor(), 50ms, ucx_get_atom::value,
              owner_hello.worker_id, d.descriptor->addr, d.descriptor->len, d.descriptor->rkey, dest)
    .receive([](uint64_t) {}, [&](caf::error&) { gave_up = true; });
  local->ucx_engine().wake();
  ASSERT_TRUE(gave_up);
  dest.reset();
  EXPECT_EQ(pool_blocks(), 1u); // still lent to the GET
  bool freed = false;
  for (int i = 0; i < 200 && !freed; ++i) {
    std::this_thread::sleep_for(20ms);
    freed = pool_blocks() == 0;
  }
  EXPECT_TRUE(freed);
  ASSERT_FALSE(client->detach(h, r->rdma->lease_id));
}

TEST(RdmaCli, PinnedPutAndGetTakeTheRdmaPathOverSharedMemory) {
  std::vector<std::string> env{"UCX_TLS=sm,self", "UCX_NET_DEVICES=lo"};
  node_process n{{"--metrics-port", "0"}, env};
  auto dir = test::temp_dir();
  auto bytes = test::payload(64 * MiB_);
  {
    std::ofstream out{dir + "/in", std::ios::binary};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto put = test::run_ferry({"put", "--pinned", "--node", n.endpoint(), dir + "/in"},
                             std::chrono::seconds{120}, env);
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto handle = put.out.substr(0, put.out.find('\n'));
  auto get = test::run_ferry({"get", "--node", n.endpoint(), "--handle", handle,
                              "-o", dir + "/out"},
                             std::chrono::seconds{120}, env);
  ASSERT_EQ(get.exit_code, 0) << get.err;
  std::ifstream in{dir + "/out", std::ios::binary};
  byte_buffer back{std::istreambuf_iterator<char>{in}, {}};
  EXPECT_EQ(checksum64(back.data(), back.size()), checksum64(bytes.data(), bytes.size()));
  auto text = test::scrape_metrics(n.metrics_port());
  EXPECT_EQ(test::series_value(text, series("rdma", "ok")), 1) << text;
}

TEST_P(Rdma, GetPinnedHasTheSameTypeOnBothPaths) {
  start();
  auto bytes = test::payload(2 * MiB_ + 9);
  for (bool pinned_slot : {true, false}) {
    SCOPED_TRACE(pinned_slot ? "rdma" : "chunked");
    auto h = stage(bytes, pinned_slot);
    auto r = client->get_pinned(h);
    ASSERT_TRUE(r) << describe(r.error());
    ASSERT_TRUE(r->block);
    EXPECT_EQ(r->size, bytes.size());
    EXPECT_EQ(checksum64(r->block->data(), r->size), checksum64(bytes.data(), bytes.size()));
    ASSERT_TRUE(client->release(h, r->lease_id));
  }
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
}

TEST_P(Rdma, GetIntoAPinnedWriterIsZeroCopy) {
  start();
  auto bytes = test::payload(3 * MiB_ + 1);
  auto h = stage(bytes);
  auto writer = client->alloc_pinned_writer(bytes.size());
  ASSERT_TRUE(writer) << describe(writer.error());
  auto r = client->get_into(h, *writer);
  ASSERT_TRUE(r) << describe(r.error());
  EXPECT_EQ(r->first, bytes.size());
  EXPECT_EQ(checksum64((*writer)->data(), bytes.size()),
            checksum64(bytes.data(), bytes.size()));
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
  ASSERT_TRUE(client->release(h, r->second));
  // A writer too small is refused before anything moves.
  auto small = client->alloc_pinned_writer(4096);
  ASSERT_TRUE(small);
  auto h2 = stage(bytes);
  auto refused = client->get_into(h2, *small);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::payload_too_large)) << describe(refused.error());
}

TEST_P(Rdma, BlocksHandedToTheCallerStayMappedPastTheNodesStop) {
  start();
  auto bytes = test::payload(2 * MiB_ + 3);
  auto h = stage(bytes);
  auto got = client->get_pinned(h);
  ASSERT_TRUE(got) << describe(got.error());
  EXPECT_EQ(local_count(transfer_path::rdma, path_reason::ok), 1);
  auto writer = client->alloc_pinned_writer(MiB_);
  ASSERT_TRUE(writer) << describe(writer.error());
  pinned_ptr block = got->block;
  pinned_ptr mine = *writer;
  client.reset();
  local->stop(); // unmaps every arena no caller holds a block of
  // Both blocks still read and write their whole range (an unmapped one
  // faults, and ASan reports the use).
  EXPECT_EQ(checksum64(block->data(), got->size), checksum64(bytes.data(), bytes.size()));
  std::memset(mine->data(), 0x5a, mine->size());
  std::memcpy(block->data(), mine->data(), MiB_);
  EXPECT_EQ(checksum64(block->data(), MiB_), checksum64(mine->data(), MiB_));
  block.reset(); // the last share unmaps, after the node is gone
  mine.reset();
  local.reset();
}

/// `ferry probe` between two `ferry node` processes that joined each other.
struct ProbeCluster {
  explicit ProbeCluster(std::vector<std::string> b_env = {}) {
    b_env.insert(b_env.end(), env.begin(), env.end());
    a = std::make_unique<node_process>(std::vector<std::string>{"--metrics-port", "0"}, env);
    b = std::make_unique<node_process>(
      std::vector<std::string>{"--join", a->endpoint(), "--metrics-port", "0"}, b_env);
    dir = test::temp_dir();
    std::ofstream out{dir + "/in", std::ios::binary};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string put(bool pinned) {
    std::vector<std::string> args{"put", "--node", a->endpoint(), dir + "/in"};
    if (pinned)
      args.insert(args.begin() + 1, "--pinned");
    auto r = test::run_ferry(args, std::chrono::seconds{60}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  nlohmann::json probe(const std::string& handle) {
    auto r = test::run_ferry({"probe", "--node", a->endpoint(), "--via", b->endpoint(),
                              "--handle", handle, "--json"},
                             std::chrono::seconds{60}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  // tcp stands in for a NIC: both nodes take the GETs UCX emulates over it.
  std::vector<std::string> env{"UCX_TLS=tcp,self", "UCX_NET_DEVICES=lo",
                               "FERRY_RDMA_EMULATED_GETS=1"};
  byte_buffer bytes = test::payload(3 * MiB_ + 17, 21);
  std::unique_ptr<node_process> a, b;
  std::string dir;
};

std::string hex_checksum(const byte_buffer& b) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(checksum64(b.data(), b.size())));
  return text;
}

TEST(RdmaCli, ProbeReportsTheRdmaPathBytesAndChecksumAndLeavesThePayloadStaged) {
  ProbeCluster c;
  auto handle = c.put(true);
  for (int i = 0; i < 2; ++i) { // detached: the payload is there for the second
    auto j = c.probe(handle);
    EXPECT_EQ(j["path"], "rdma") << j.dump();
    EXPECT_EQ(j["reason"], "ok");
    EXPECT_EQ(j["bytes"], c.bytes.size());
    EXPECT_EQ(j["checksum"], hex_checksum(c.bytes));
    EXPECT_GT(j["seconds"].get<double>(), 0);
  }
  // B's consumer counted the GETs; nothing came to the shell.
  auto text = test::scrape_metrics(c.b->metrics_port());
  EXPECT_EQ(test::series_value(text, "ferry_rendezvous_rdma_get_duration_seconds_count"), 2)
    << text;
}

TEST(RdmaCli, ProbeNamesTheChunkedPathAndWhy) {
  ProbeCluster c{{"FERRY_RDMA_RENDEZVOUS_DISABLE=1"}}; // B's kill switch
  auto j = c.probe(c.put(true));
  EXPECT_EQ(j["path"], "chunked") << j.dump();
  EXPECT_EQ(j["reason"], "kill_switch");
  EXPECT_EQ(j["checksum"], hex_checksum(c.bytes));
  auto plain = c.probe(c.put(false));
  EXPECT_EQ(plain["path"], "chunked");
  EXPECT_EQ(plain["checksum"], hex_checksum(c.bytes));
}

TEST(RdmaCli, ProbeRefusesAHandleTheNodeDoesNotOwn) {
  ProbeCluster c;
  auto handle = c.put(false);
  auto r = test::run_ferry({"probe", "--node", c.b->endpoint(), "--via", c.a->endpoint(),
                            "--handle", handle},
                           std::chrono::seconds{60}, c.env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not owned by the node at"), std::string::npos) << r.err;
}
