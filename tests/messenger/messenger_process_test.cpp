// The messenger between processes: this test process runs a node in-process
// and calls a ferry_messenger_peer (a node with test handlers, its own
// process) or a `ferry node`. Bytes are checked with checksums, behaviour
// through both nodes' metrics.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/rendezvous/path_metrics.hpp"
#include "process/child_process.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "protocol/staging_headers.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/builtin_handlers.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using namespace std::chrono_literals;
using messenger::envelope;
using test::node_process;

namespace {

constexpr uint64_t threshold = messenger::default_staging_threshold;

std::string peer_bin() {
  return FERRY_MESSENGER_PEER;
}

/// Polls `pred` until it holds, by default at most 20 s.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds bound = std::chrono::seconds{20}) {
  return test::eventually(pred, bound);
}

node_config local_config() {
  node_config c;
  c.listen = false;
  c.request_timeout_ms = 20000;
  return c;
}

/// A peer process (test handlers, or `ferry node`) and an in-process node
/// connected to it.
struct Messenger : ::testing::Test {
  void start(std::vector<std::string> peer_args = {}, node_config cfg = local_config(),
             bool ferry_node = false) {
    peer_args.insert(peer_args.end(), {"--metrics-port", "0"});
    peer = std::make_unique<node_process>(peer_args, std::vector<std::string>{},
                                          ferry_node ? std::string{} : peer_bin());
    local = std::make_unique<node>(cfg);
    if (auto err = local->start())
      throw std::runtime_error(describe(err));
    auto hello = local->connect(peer->endpoint());
    if (!hello)
      throw std::runtime_error(describe(hello.error()));
    peer_id = hello->worker_id;
    m = std::make_unique<messenger_client>(*local);
  }

  double peer_metric(const std::string& series) {
    return test::series_value(test::scrape_metrics(peer->metrics_port()), series);
  }

  double local_metric(const std::string& name) {
    return test::registry_value(local->metrics_registry(), name);
  }

  nlohmann::json peer_stats() {
    auto r = m->call(peer_id, "test.stats", {});
    EXPECT_TRUE(r) << describe(r.error());
    return r ? nlohmann::json::parse(std::string{r->payload.begin(), r->payload.end()})
             : nlohmann::json{};
  }

  /// The fetches took this run's channel: the control channel (the
  /// default), CAF requests in the caf_channel: reruns.
  void TearDown() override {
    if (local && (local->has_ucx() || !test::control_channel_on())) {
      EXPECT_EQ(test::calls_by_other_channel(local->metrics_registry()), 0);
    }
    m.reset();
    local.reset();
    peer.reset();
  }

  std::unique_ptr<node_process> peer;
  std::unique_ptr<node> local;
  std::unique_ptr<messenger_client> m;
  uint64_t peer_id = 0;
};

uint64_t sum(const byte_buffer& b) {
  return checksum64(b.data(), b.size());
}

/// The checksum as ferry.checksum writes it in its reply's headers.
std::string hex_checksum(const byte_buffer& b) {
  return checksum_text(sum(b));
}

} // namespace

// -- transparent staging -------------------------------------------------------------------

TEST_F(Messenger, PayloadsOfEverySizeRoundTripAndOnlyThoseAboveTheThresholdGoByHandle) {
  start({}, local_config(), true);
  const std::vector<size_t> sizes{0, 1, threshold, threshold + 1, 64 * MiB};
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto bytes = test::payload(sizes[i], i + 1);
    auto reply = m->call(peer_id, echo_handler, bytes, {}, 60s);
    ASSERT_TRUE(reply) << sizes[i] << ": " << describe(reply.error());
    EXPECT_EQ(reply->payload.size(), sizes[i]);
    EXPECT_EQ(sum(reply->payload), sum(bytes)) << sizes[i];
  }
  // Requests staged here, replies staged there: threshold + 1 and 64 MiB.
  EXPECT_EQ(local_metric("ferry_messenger_staged_payloads_total"), 2);
  EXPECT_EQ(peer_metric("ferry_messenger_staged_payloads_total"), 2);
  EXPECT_EQ(peer_metric("ferry_messenger_fetches_total{result=\"ok\"}"), 2);
  EXPECT_EQ(local_metric("ferry_messenger_fetches_total"), 2); // the replies
  EXPECT_EQ(peer_metric("ferry_messenger_calls_total{handler=\"ferry.echo\",result=\"ok\"}"),
            5);
  // Single-use: every staged copy is gone on both sides.
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
  EXPECT_TRUE(eventually([&] { return peer_metric("ferry_rendezvous_slots") == 0; }));
}

TEST_F(Messenger, A64MiBCallGoesByHandleAndItsHandlerSeesThePlainBytes) {
  start({}, local_config(), true);
  auto bytes = test::payload(64 * MiB, 7);
  auto reply = m->call(peer_id, checksum_handler, bytes, {}, 60s);
  ASSERT_TRUE(reply) << describe(reply.error());
  EXPECT_EQ(reply->hdrs["bytes"], std::to_string(64 * MiB));
  EXPECT_EQ(reply->hdrs["checksum"], hex_checksum(bytes));
  EXPECT_EQ(reply->hdrs.count(messenger::handle_header), 0u);
  EXPECT_EQ(local_metric("ferry_messenger_staged_payloads_total"), 1);
  EXPECT_EQ(peer_metric("ferry_messenger_fetches_total{result=\"ok\"}"), 1);
}

/// Calls ferry.checksum with payloads of `sizes` and checks each reply.
void call_checksums(Messenger& t, const std::vector<size_t>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto bytes = test::payload(sizes[i], 40 + i);
    auto reply = t.m->call(t.peer_id, checksum_handler, bytes, {}, 60s);
    ASSERT_TRUE(reply) << describe(reply.error());
    EXPECT_EQ(reply->hdrs["bytes"], std::to_string(sizes[i])) << i;
    EXPECT_EQ(reply->hdrs["checksum"], hex_checksum(bytes)) << i;
  }
}

TEST_F(Messenger, AFinishedHandlersPayloadBufferTakesTheNextFetchedPayload) {
  start({}, local_config(), true);
  // Larger, smaller, larger: a reused buffer holds exactly the new bytes.
  call_checksums(*this, {16 * MiB, 8 * MiB, 16 * MiB});
  EXPECT_EQ(peer_metric("ferry_messenger_fetches_total{result=\"ok\"}"), 3);
  EXPECT_EQ(peer_metric("ferry_messenger_warm_buffer_reuses_total"), 2);
  EXPECT_GE(peer_metric("ferry_messenger_warm_buffer_bytes"), 16.0 * MiB);
}

TEST_F(Messenger, WarmBufferBytesZeroKeepsNoPayloadBuffer) {
  start({"--warm-buffer-bytes", "0"}, local_config(), true);
  call_checksums(*this, {16 * MiB, 16 * MiB});
  EXPECT_EQ(peer_metric("ferry_messenger_fetches_total{result=\"ok\"}"), 2);
  EXPECT_EQ(peer_metric("ferry_messenger_warm_buffer_reuses_total"), 0);
  EXPECT_EQ(peer_metric("ferry_messenger_warm_buffer_bytes"), 0);
}

TEST_F(Messenger, ForwardedStagingHeadersNeverReachAHandlerOrTheWire) {
  start({}, local_config(), true);
  // A handle of something else staged here, and a stale budget: what a
  // handler forwarding the headers of another message would pass on.
  blocking_client client{*local};
  auto other = client.register_data(test::payload(1000, 9));
  ASSERT_TRUE(other);
  for (size_t size : {size_t{100}, size_t{2 * MiB}}) {
    messenger::headers h{{"user", "kept"},
                         {messenger::handle_header, to_string(*other)},
                         {messenger::budget_header, "1"}};
    auto bytes = test::payload(size, 3);
    auto reply = m->call(peer_id, echo_handler, bytes, h, 30s);
    ASSERT_TRUE(reply) << size << ": " << describe(reply.error());
    EXPECT_EQ(sum(reply->payload), sum(bytes)) << size; // its own bytes
    EXPECT_EQ(reply->hdrs["user"], "kept");
    // ferry.echo replies the headers its handler saw.
    EXPECT_EQ(reply->hdrs.count(messenger::handle_header), 0u) << size;
    EXPECT_EQ(reply->hdrs.count(messenger::budget_header), 0u) << size;
  }
  // The other payload was never fetched: still staged here.
  auto md = client.metadata(*other);
  EXPECT_TRUE(md) << describe(md.error());
}

TEST_F(Messenger, TheTransparentStagerNeverMapsAnArenaAndRegistersLargePayloadsInPlace) {
  start();
  if (!local->has_ucx())
    GTEST_SKIP() << "no UCX on this machine";
  auto& reg = local->metrics_registry();
  auto arenas = [&] {
    return test::registry_value(reg, "ferry_rdma_registrations_total", "kind", "arena");
  };
  auto in_place = [&] {
    return test::registry_value(reg, "ferry_rdma_registrations_total", "kind", "external");
  };
  auto by_rdma = [&] { return local->paths().value(transfer_path::rdma, path_reason::ok); };
  // 2 MiB (at least register_in_place_min): registered where it lies and
  // read by RDMA, no arena mapped; the registration goes once it was read.
  auto big = test::payload(2 * MiB, 4);
  auto first = m->call(peer_id, checksum_handler, big, {}, 30s);
  ASSERT_TRUE(first) << describe(first.error());
  EXPECT_EQ(first->hdrs["checksum"], hex_checksum(big));
  EXPECT_EQ(arenas(), 0) << "a send mapped an arena";
  EXPECT_EQ(in_place(), 1);
  EXPECT_EQ(by_rdma(), 1);
  EXPECT_TRUE(eventually([&] {
    return test::registry_value(reg, "ferry_rdma_live_regions") == 0
           && test::registry_value(reg, "ferry_rdma_registered_bytes") == 0;
  }));
  // 512 KiB (staged, but copied): with no arena mapped it stays in plain
  // memory; once an explicit pinned registration mapped one, it uses that.
  auto mid = test::payload(512 * KiB, 5);
  auto plain = m->call(peer_id, checksum_handler, mid, {}, 30s);
  ASSERT_TRUE(plain) << describe(plain.error());
  EXPECT_EQ(plain->hdrs["checksum"], hex_checksum(mid));
  EXPECT_EQ(arenas(), 0) << "a send mapped an arena";
  EXPECT_EQ(by_rdma(), 1) << "plain memory answers chunked";
  blocking_client client{*local};
  ASSERT_TRUE(client.register_data_pinned(test::payload(4096, 1)));
  auto mapped = arenas();
  EXPECT_GE(mapped, 1);
  auto pinned = m->call(peer_id, checksum_handler, mid, {}, 30s);
  ASSERT_TRUE(pinned) << describe(pinned.error());
  EXPECT_EQ(pinned->hdrs["checksum"], hex_checksum(mid));
  EXPECT_EQ(arenas(), mapped) << "a send mapped an arena";
  EXPECT_EQ(in_place(), 1) << "512 KiB is copied, not registered in place";
  EXPECT_EQ(by_rdma(), 2) << "the payload was staged in the mapped arena and read by RDMA";
}

// -- deadlines and leftovers ---------------------------------------------------------------------

TEST_F(Messenger, TheCallersBudgetDropsAStalledFetchWithNoReply) {
  auto cfg = local_config();
  cfg.ucx = false;                // the chunked path, where pulls can stall
  cfg.test_stall_pulls_from = 0;  // this node never answers a pull
  start({}, cfg);
  auto reply = m->call(peer_id, checksum_handler, test::payload(2 * MiB, 1), {}, 800ms);
  ASSERT_FALSE(reply);
  // The caller's own timer answered: the receiver sent nothing.
  EXPECT_TRUE(is(reply.error(), errc::timeout)) << describe(reply.error());
  EXPECT_EQ(describe(reply.error()).find("staged_fetch_timeout"), std::string::npos)
    << describe(reply.error());
  EXPECT_TRUE(eventually(
    [&] { return peer_metric("ferry_messenger_fetches_total{result=\"timeout\"}") == 1; }));
  EXPECT_TRUE(
    eventually([&] { return peer_metric("ferry_messenger_fetches_in_flight") == 0; }));
  // The receiver gave the lease and the copy back (single use).
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
}

TEST_F(Messenger, TheReceiversStagedFetchTimeoutGivesACallerWithoutOneAnErrorReply) {
  auto cfg = local_config();
  cfg.ucx = false;
  cfg.test_stall_pulls_from = 0;
  start({"--staged-fetch-timeout-ms", "700"}, cfg);
  auto reply = m->call(peer_id, checksum_handler, test::payload(2 * MiB, 1));
  ASSERT_FALSE(reply);
  EXPECT_TRUE(is(reply.error(), errc::timeout)) << describe(reply.error());
  EXPECT_NE(describe(reply.error()).find("did not finish in time"), std::string::npos)
    << describe(reply.error());
  EXPECT_NE(describe(reply.error()).find("700 ms"), std::string::npos);
  EXPECT_EQ(peer_metric("ferry_messenger_fetches_total{result=\"timeout\"}"), 1);
  EXPECT_EQ(peer_metric("ferry_messenger_calls_total{handler=\"ferry.checksum\","
                        "result=\"fetch_failed\"}"),
            1);
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
}

TEST_F(Messenger, ASenderThatStopsAnsweringCostsTheReceiverItsFetchOnlyUntilTheBound) {
  start({"--staged-fetch-timeout-ms", "1000"}, local_config(), true);
  auto dir = test::temp_dir();
  auto file = dir + "/payload.bin";
  {
    auto bytes = test::payload(4 * MiB, 5);
    std::ofstream{file, std::ios::binary}.write(bytes.data(),
                                                static_cast<std::streamsize>(bytes.size()));
  }
  // The sender is a `ferry call` process; its owner answers the first pull
  // only, and once the fetch runs it is stopped outright.
  auto sender = test::start_ferry({"call", "--node", peer->endpoint(), "--handler",
                                   checksum_handler, "--ucx", "false",
                                   "--test-stall-pulls-from", "1", file});
  ASSERT_TRUE(eventually(
    [&] { return peer_metric("ferry_messenger_fetches_in_flight") == 1; }, 30s));
  EXPECT_TRUE(test::freeze_process(sender));
  EXPECT_TRUE(eventually(
    [&] { return peer_metric("ferry_messenger_fetches_total{result=\"timeout\"}") == 1; }));
  EXPECT_TRUE(
    eventually([&] { return peer_metric("ferry_messenger_fetches_in_flight") == 0; }));
  ::kill(sender, SIGCONT);
  auto status = process::wait_for_exit(sender, 60s);
  ASSERT_TRUE(status) << "ferry call did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
  // The receiver is whole: the next caller is served.
  auto next = m->call(peer_id, checksum_handler, test::payload(10, 1), {}, 10s);
  EXPECT_TRUE(next) << describe(next.error());
}

TEST_F(Messenger, AStagedPayloadNobodyFetchesIsFreedOnTheSenderByItsTimeToLive) {
  start();
  ASSERT_TRUE(peer->freeze()); // the receiver never takes the message
  auto reply = m->call(peer_id, checksum_handler, test::payload(2 * MiB, 2), {}, 1000ms);
  EXPECT_FALSE(reply);
  // The call's deadline was the staged copy's TTL.
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
  EXPECT_EQ(local_metric("ferry_rendezvous_slots_expired_total"), 1);
  peer->thaw();
}

TEST_F(Messenger, ACopyStagedForANodeThatGoesAwayIsFreedThenNotAtItsTimeToLive) {
  auto cfg = local_config();
  cfg.transfer_timeout_ms = 600000; // a send's copy lives this long unfetched
  start({}, cfg);
  ASSERT_TRUE(peer->freeze()); // the receiver never fetches it
  ASSERT_FALSE(m->send(peer_id, "test.sink", test::payload(2 * MiB, 3)));
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 1; }));
  peer->kill(SIGKILL);
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
  EXPECT_EQ(local_metric("ferry_rendezvous_slots_expired_total"), 0);
  EXPECT_EQ(local_metric("ferry_rendezvous_staged_bytes"), 0);
}

/// The peak resident set of process `pid` so far, in bytes (VmHWM).
uint64_t peak_rss(pid_t pid) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stoull(line.substr(6)) * KiB;
  return 0;
}

TEST_F(Messenger, APayloadOverTheReceiversLimitIsRefusedBeforeItIsAllocated) {
  start({"--staged-payload-max", std::to_string(1 * MiB)}, local_config(), true);
  // The receiver's peak so far (its start, its arena, a first call).
  ASSERT_TRUE(m->call(peer_id, checksum_handler, test::payload(64, 1), {}, 10s));
  auto before = peak_rss(peer->pid());
  ASSERT_GT(before, 0u);
  const uint64_t size = 256 * MiB;
  auto reply = m->call(peer_id, echo_handler, test::payload(size, 6), {}, 60s);
  ASSERT_FALSE(reply);
  auto text = describe(reply.error());
  EXPECT_NE(text.find(std::to_string(size)), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(1 * MiB)), std::string::npos) << text;
  EXPECT_EQ(peer_metric("ferry_messenger_fetches_total{result=\"over_limit\"}"), 1);
  EXPECT_EQ(peer_metric("ferry_messenger_calls_total{handler=\"ferry.echo\",result=\"ok\"}"),
            -1)
    << "the handler never ran";
  // Released, so the sender freed its copy.
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
  // The receiver's peak grew by nothing near the payload's size.
  auto after = peak_rss(peer->pid());
  EXPECT_LT(after - before, size / 8) << "peak RSS " << before << " -> " << after;
}

// -- handlers and peers ----------------------------------------------------------------------

TEST_F(Messenger, AnUnknownHandlerIsAnErrorNamingIt) {
  start({}, local_config(), true);
  auto reply = m->call(peer_id, "no.such.handler", test::payload(10, 1), {}, 10s);
  ASSERT_FALSE(reply);
  EXPECT_TRUE(is(reply.error(), errc::unknown_handler)) << describe(reply.error());
  EXPECT_NE(describe(reply.error()).find("'no.such.handler'"), std::string::npos);
  EXPECT_EQ(peer_metric("ferry_messenger_calls_total{handler=\"(unknown)\","
                        "result=\"unknown_handler\"}"),
            1);
  // A staged payload nobody will fetch is dropped at the error, not at its
  // TTL (here the transfer timeout: minutes).
  auto staged = m->call(peer_id, "no.such.handler", test::payload(2 * MiB, 1));
  ASSERT_FALSE(staged);
  EXPECT_TRUE(is(staged.error(), errc::unknown_handler)) << describe(staged.error());
  EXPECT_EQ(local_metric("ferry_messenger_staged_payloads_total"), 1);
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }, 5s));
  EXPECT_EQ(local_metric("ferry_rendezvous_slots_expired_total"), 0);
}

TEST_F(Messenger, ACallToANodeThatGoesDownFailsAsPeerDownNotAtItsTimeout) {
  start();
  std::thread killer{[&] {
    eventually([&] {
      return peer_metric("ferry_messenger_calls_total{handler=\"test.sleep\",result=\"ok\"}")
             == -1;
    });
    std::this_thread::sleep_for(200ms); // let the call reach the handler
    peer->kill(SIGKILL);
  }};
  auto reply = m->call(peer_id, "test.sleep", {}, {{"ms", "60000"}}); // no timeout
  killer.join();
  ASSERT_FALSE(reply);
  EXPECT_TRUE(is(reply.error(), errc::peer_down)) << describe(reply.error());
}

TEST_F(Messenger, AFireAndForgetSendReachesItsHandlerStagedOrInline) {
  start();
  auto big = test::payload(3 * MiB, 8);
  ASSERT_FALSE(m->send(peer_id, "test.sink", test::payload(10, 1)));
  ASSERT_FALSE(m->send(peer_id, "test.sink", big));
  EXPECT_TRUE(eventually([&] { return peer_stats().value("sink_count", 0) == 2; }));
  auto stats = peer_stats();
  EXPECT_EQ(stats.value("sink_bytes", uint64_t{0}), 10 + 3 * MiB);
  EXPECT_EQ(stats.value("sink_checksum", uint64_t{0}), sum(big));
  EXPECT_EQ(local_metric("ferry_messenger_staged_payloads_total"), 1);
  EXPECT_TRUE(eventually([&] { return local_metric("ferry_rendezvous_slots") == 0; }));
}

// -- streams -------------------------------------------------------------------------------------

TEST_F(Messenger, AStreamWithASlowConsumerHoldsItsProducerBackAndEndsCleanly) {
  start();
  const uint64_t items = 64;
  auto s = m->open_stream(peer_id, "test.count", {},
                          {{"items", std::to_string(items)}, {"bytes", "1024"}});
  ASSERT_TRUE(s) << describe(s.error());
  const uint64_t window = 8; // messenger_config::stream_window
  ASSERT_TRUE(eventually([&] { return peer_stats().value("produced", uint64_t{0}) >= window; }));
  EXPECT_EQ(peer_stats().value("produced", uint64_t{0}), window) << "ran past the window";
  for (uint64_t i = 0; i < items; ++i) {
    auto item = s->next();
    ASSERT_TRUE(item) << describe(item.error());
    ASSERT_TRUE(*item) << "ended early at " << i;
    EXPECT_EQ((*item)->hdrs["seq"], std::to_string(i));
    EXPECT_EQ(sum((*item)->payload), sum(test::payload(1024, i)));
    EXPECT_LE(peer_stats().value("produced", uint64_t{0}), i + 1 + window);
  }
  auto end = s->next();
  ASSERT_TRUE(end) << describe(end.error());
  EXPECT_FALSE(*end);
  EXPECT_TRUE(eventually([&] { return peer_stats().value("streams_closed", 0) == 1; }));
  EXPECT_EQ(peer_metric("ferry_messenger_streams"), 0);
  EXPECT_EQ(local_metric("ferry_messenger_streams"), 0);
}

TEST_F(Messenger, StreamItemsAboveTheThresholdGoByHandleAndArriveInOrder) {
  start();
  auto s = m->open_stream(peer_id, "test.count", {},
                          {{"items", "6"}, {"bytes", std::to_string(threshold + 4096)}});
  ASSERT_TRUE(s) << describe(s.error());
  for (uint64_t i = 0; i < 6; ++i) {
    auto item = s->next();
    ASSERT_TRUE(item && *item) << i;
    EXPECT_EQ((*item)->hdrs["seq"], std::to_string(i));
    EXPECT_EQ((*item)->hdrs.count(messenger::handle_header), 0u);
    EXPECT_EQ(sum((*item)->payload), sum(test::payload(threshold + 4096, i)));
  }
  auto end = s->next();
  ASSERT_TRUE(end && !*end);
  EXPECT_EQ(peer_metric("ferry_messenger_staged_payloads_total"), 6);
  EXPECT_EQ(local_metric("ferry_messenger_fetches_total"), 6);
  EXPECT_TRUE(eventually([&] { return peer_metric("ferry_rendezvous_slots") == 0; }));
}

TEST_F(Messenger, AnOverLimitStreamItemEndsItsOwnStreamAndStopsItsProducerOnly) {
  auto cfg = local_config();
  cfg.staged_payload_max = 1 * MiB;
  start({}, cfg);
  auto big = m->open_stream(peer_id, "test.count", {},
                            {{"items", "50"}, {"bytes", std::to_string(2 * MiB)}});
  auto small = m->open_stream(peer_id, "test.count", {},
                              {{"items", "20"}, {"bytes", "4096"}});
  ASSERT_TRUE(big && small);
  auto refused = big->next();
  ASSERT_FALSE(refused);
  auto text = describe(refused.error());
  EXPECT_TRUE(is(refused.error(), errc::stream_ended)) << text;
  EXPECT_NE(text.find(std::to_string(2 * MiB)), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(1 * MiB)), std::string::npos) << text;
  uint64_t got = 0;
  for (;;) {
    auto item = small->next();
    ASSERT_TRUE(item) << describe(item.error());
    if (!*item)
      break;
    ++got;
  }
  EXPECT_EQ(got, 20u);
  // Both producers are gone: the refused one was told to stop.
  EXPECT_TRUE(eventually([&] { return peer_stats().value("streams_closed", 0) == 2; }));
  EXPECT_LT(peer_stats().value("produced", uint64_t{0}), 50u + 20u);
  // Refused items (the first, and any the producer had sent before it
  // stopped) were released, not left staged on the producer.
  EXPECT_GE(local_metric("ferry_messenger_fetches_total"), 1);
  EXPECT_TRUE(eventually([&] { return peer_metric("ferry_rendezvous_slots") == 0; }));
}

// -- the command line ----------------------------------------------------------------------------

TEST_F(Messenger, FerryCallChecksANodeAndItsDataPathFromAShell) {
  start({}, local_config(), true);
  auto dir = test::temp_dir();
  auto in = dir + "/in.bin";
  auto bytes = test::payload(5 * MiB, 11);
  std::ofstream{in, std::ios::binary}.write(bytes.data(),
                                            static_cast<std::streamsize>(bytes.size()));
  auto out = dir + "/out.bin";
  auto echo = test::run_ferry({"call", "--node", peer->endpoint(), "--handler",
                               echo_handler, "--timeout-ms", "30000", "-o", out, in});
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  std::ifstream back{out, std::ios::binary};
  byte_buffer got{std::istreambuf_iterator<char>{back}, {}};
  EXPECT_EQ(sum(got), sum(bytes));
  auto check = test::run_ferry({"call", "--node", peer->endpoint(), "--handler",
                                checksum_handler, "--json", in});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  auto j = nlohmann::json::parse(check.out);
  EXPECT_EQ(j["headers"]["bytes"], std::to_string(bytes.size()));
  EXPECT_EQ(j["headers"]["checksum"], j["sent_checksum"]);
  auto unknown = test::run_ferry({"call", "--node", peer->endpoint(), "--handler",
                                  "nobody.home", in});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("'nobody.home'"), std::string::npos) << unknown.err;
}

