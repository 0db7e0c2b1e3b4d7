// Hostile peers: plain CAF actor systems in this process that speak ferry's
// control plane with bad numbers. One plays a consumer against a `ferry
// node` process; one plays an owner that a ferry node pulls from. Each bad
// input gets an error reply naming it, nothing crashes, and the node's
// books return to their baseline.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <limits>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/cluster/gateway_interface.hpp"
#include "actors/cluster/lost_peers.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/errors.hpp"
#include "protocol/peer_hello.hpp"
#include "protocol/rv_messages.hpp"
#include "protocol/type_registry.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"
#include "tests/cluster/test_support.hpp"
#ifdef FERRY_WITH_UCX
#  include "rdma/ucx_context.hpp"
#  include "rdma/ucx_memory.hpp"
#  include "rdma/ucx_worker.hpp"
#endif

using namespace ferry;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t top = std::numeric_limits<uint64_t>::max();

struct plain_config : caf::actor_system_config {
  plain_config() {
    register_protocol_types(*this);
    load<caf::io::middleman>();
    set("logger.console", caf::atom("none"));
  }
};

/// A plain CAF system that said hello to a `ferry node` (it is no node).
struct HostileConsumer : ::testing::Test {
  HostileConsumer() : sys(cfg), self(sys) {
    auto gw = sys.middleman().remote_actor<gateway_actor>("127.0.0.1", remote.port());
    if (!gw)
      throw std::runtime_error(sys.render(gw.error()));
    gateway = *gw;
    // (Spawns take an argument: CAF 0.17 dereferences a null tuple for an
    // argument-less spawn, which UBSan reports.)
    dummy = sys.spawn([](caf::event_based_actor*, int) { return caf::behavior{[](int) {}}; },
                      0);
    peer_hello mine;
    mine.worker_id = 0xbadbadbad;
    mine.gateway = dummy;
    mine.owner = dummy;
    self->request(gateway, 10s, hello_atom::value, mine)
      .receive([&](peer_hello& theirs) { owner = caf::actor_cast<owner_actor>(theirs.owner); },
               [&](caf::error& err) { throw std::runtime_error(sys.render(err)); });
  }

  ~HostileConsumer() override {
    caf::anon_send_exit(dummy, caf::exit_reason::user_shutdown);
  }

  template <class Reply, class Atom>
  caf::expected<Reply> call(Atom atom, const std::string& body) {
    caf::expected<Reply> out = make_error(errc::timeout);
    self->request(owner, 10s, atom, body)
      .receive([&](Reply& r) { out = std::move(r); },
               [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  data_handle stage(size_t n) {
    data_handle h;
    self->request(owner, 10s, register_atom::value, test::payload(n), uint64_t{0})
      .receive([&](data_handle& x) { h = x; },
               [&](caf::error& err) { ADD_FAILURE() << sys.render(err); });
    return h;
  }

  nlohmann::json owner_stat() {
    nlohmann::json j;
    self->request(gateway, 10s, stat_atom::value)
      .receive([&](std::string& s) { j = nlohmann::json::parse(s)["owner"]; },
               [&](caf::error& err) { ADD_FAILURE() << sys.render(err); });
    return j;
  }

  test::node_process remote;
  plain_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  gateway_actor gateway;
  owner_actor owner;
  caf::actor dummy;
};

#define EXPECT_ERRC(expr, code)                                                \
  do {                                                                         \
    auto r_ = (expr);                                                          \
    ASSERT_FALSE(r_) << #expr << " was accepted";                              \
    EXPECT_TRUE(is(r_.error(), code)) << #expr << ": " << describe(r_.error()); \
  } while (false)

} // namespace

TEST_F(HostileConsumer, EveryBadNumberGetsAnErrorAndTheBooksBalance) {
  auto a = stage(3 * 512 * 1024 + 1);
  auto b = stage(10);
  auto baseline = owner_stat();
  EXPECT_EQ(baseline["slots"], 2);
  EXPECT_EQ(baseline["leases"], 0);

  // A lease deadline of 2^64-1 ms is clamped, not turned negative or wrapped.
  rv_acquire_request acq;
  acq.handle = a;
  acq.lease_ms = top;
  auto body = call<std::string>(rv_acquire_atom::value, encode(acq));
  ASSERT_TRUE(body) << describe(body.error());
  auto ready = decode<rv_acquire_response>(*body)->ready;
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->chunk_count, 4u);
  acq.handle = b;
  acq.lease_ms = 0;
  auto other = decode<rv_acquire_response>(*call<std::string>(rv_acquire_atom::value,
                                                             encode(acq)))->ready;
  ASSERT_TRUE(other);

  // Pulls out of range, of unknown transfers.
  for (uint64_t index : {uint64_t{4}, uint64_t{1} << 40, top})
    EXPECT_ERRC(call<chunk_bytes>(rv_pull_atom::value,
                                  encode(rv_pull_request{ready->transfer_id, index})),
                errc::chunk_out_of_range);
  for (uint64_t t : {uint64_t{0}, ready->transfer_id + 1000, top})
    EXPECT_ERRC(call<chunk_bytes>(rv_pull_atom::value, encode(rv_pull_request{t, 0})),
                errc::unknown_transfer);

  // Stale and foreign lease ids, handles of other owners.
  const data_handle foreign{a.hi + 1, a.lo};
  EXPECT_ERRC(call<std::string>(rv_detach_atom::value,
                                encode(rv_detach_request{a, ready->lease_id + 1000})),
              errc::unknown_lease);
  EXPECT_ERRC(call<std::string>(rv_release_atom::value,
                                encode(rv_release_request{a, other->lease_id})),
              errc::unknown_lease); // b's lease on a
  EXPECT_ERRC(call<std::string>(rv_lease_renew_atom::value,
                                encode(rv_lease_renew_request{a, top, true})),
              errc::unknown_lease);
  EXPECT_ERRC(call<std::string>(rv_release_atom::value,
                                encode(rv_release_request{foreign, ready->lease_id})),
              errc::unknown_handle);
  EXPECT_ERRC(call<std::string>(rv_ref_atom::value, encode(rv_ref_request{foreign})),
              errc::unknown_handle);
  acq.handle = foreign;
  EXPECT_ERRC(call<std::string>(rv_acquire_atom::value, encode(acq)), errc::unknown_handle);
  acq.handle = data_handle{a.hi, top};
  EXPECT_ERRC(call<std::string>(rv_acquire_atom::value, encode(acq)), errc::unknown_handle);

  // Garbage bodies, for every call.
  const std::vector<std::string> garbage_bodies{
    "", "\xff\xfe", "{", "[1]", "{\"handle\":7}", std::string(100000, '[')};
  for (const auto& bad : garbage_bodies) {
    EXPECT_ERRC(call<std::string>(rv_acquire_atom::value, bad), errc::malformed_body);
    EXPECT_ERRC(call<std::string>(rv_metadata_atom::value, bad), errc::malformed_body);
    EXPECT_ERRC(call<chunk_bytes>(rv_pull_atom::value, bad), errc::malformed_body);
    EXPECT_ERRC(call<std::string>(rv_release_atom::value, bad), errc::malformed_body);
    EXPECT_ERRC(call<std::string>(rv_lease_renew_atom::value, bad), errc::malformed_body);
  }
  EXPECT_ERRC(call<std::string>(rv_release_atom::value,
                                "{\"handle\":{\"hi\":1,\"lo\":2},\"lease_id\":-1}"),
              errc::malformed_body);

  // The node stayed up; its own leases are still there and still work.
  auto chunk = call<chunk_bytes>(rv_pull_atom::value,
                                 encode(rv_pull_request{ready->transfer_id, 3}));
  ASSERT_TRUE(chunk) << describe(chunk.error());
  EXPECT_EQ(chunk->size(), 1u);
  EXPECT_EQ(owner_stat()["leases"], 2);
  ASSERT_TRUE(call<std::string>(rv_release_atom::value,
                                encode(rv_release_request{a, ready->lease_id})));
  ASSERT_TRUE(call<std::string>(rv_release_atom::value,
                                encode(rv_release_request{b, other->lease_id})));
  auto end = owner_stat();
  EXPECT_EQ(end["slots"], 0);
  EXPECT_EQ(end["leases"], 0);
  EXPECT_EQ(end["transfers"], 0);
  EXPECT_EQ(end["staged_bytes"], 0);
}

namespace {

/// What the hostile owner answers, chosen by the handle's slot id.
enum scenario : uint64_t {
  huge_total = 1,    // Ready for 2^64-1 bytes (a consistent chunk count)
  lying_count = 2,   // a chunk count that does not fit the length
  oversized = 3,     // a chunk larger than announced
  truncated = 4,     // a chunk shorter than announced
  garbage = 5,       // an acquire answer that is no JSON
  huge_rdma = 6,     // an RDMA answer to an acquire without an offer
  // Eager acquires (every other scenario answers them as an owner of an
  // older ferry does: no such message, so the consumer acquires plainly).
  eager_longer = 7,   // eager, 100 bytes announced, 200 sent
  eager_larger = 8,   // eager, 20000 bytes (more than the 16 KiB asked)
  eager_huge = 9,     // eager, 2^64-1 bytes in one chunk
  eager_unmarked = 10, // 100 bytes with an answer that is not eager
  eager_ok = 11,      // a well-formed eager answer of 100 bytes
  // RDMA grants with a real UCX key (HostileRdmaOwner); an acquire without
  // an offer (the consumer's fallback) is answered RDMA again.
  rdma_huge = 12,     // 2^60 bytes, descriptor and answer agreeing
  rdma_wrapping = 13, // addr + len past 2^64
  rdma_mismatch = 14, // the descriptor says 4096 bytes, the answer 8192
};

/// What the hostile owner puts in an RDMA grant: a real registration's
/// address and packed key (HostileRdmaOwner), so only the lengths lie.
struct hostile_key {
  uint64_t addr = 0;
  std::vector<uint8_t> rkey;
};

constexpr uint64_t hostile_worker = 0x0bad0bad0bad;

struct owner_log {
  std::atomic<int> detaches{0};
  std::atomic<int> acquires{0};
  std::atomic<int> eager_acquires{0};
};

/// The hostile owner's eager answers, by scenario.
caf::result<std::string, chunk_bytes> hostile_eager_answer(const data_handle& h) {
  rv_ready r{1, 1, 524288, 1, 100};
  r.eager = true;
  size_t sent = 100;
  switch (h.lo) {
    case eager_longer:
      sent = 200;
      break;
    case eager_larger:
      r.total_len = sent = 20000;
      break;
    case eager_huge:
      r.total_len = top;
      r.chunk_size = top;
      break;
    case eager_unmarked:
      r.eager = false;
      break;
    case eager_ok:
      break;
    default:
      return caf::make_error(caf::sec::unexpected_message);
  }
  char* fill = nullptr;
  auto bytes = chunk_bytes::allocate(sent, &fill);
  std::memset(fill, 0x5a, sent);
  rv_acquire_response answer;
  answer.ready = r;
  return caf::result<std::string, chunk_bytes>{encode(answer), std::move(bytes)};
}

/// The RDMA grant of an rdma_* scenario.
rv_rdma_grant hostile_grant(uint64_t scenario, const hostile_key& key) {
  rdma_descriptor d;
  d.addr = key.addr;
  d.rkey = key.rkey;
  d.len = 4096;
  uint64_t total = 4096;
  switch (scenario) {
    case rdma_huge:
      d.len = total = uint64_t{1} << 60;
      break;
    case rdma_wrapping: // written by hand: the encoder refuses the range
      d.addr = ~uint64_t{0} - 4095;
      d.len = total = 8192;
      break;
    case rdma_mismatch:
      total = 8192;
      break;
  }
  auto wrapped = d;
  wrapped.addr = key.addr;
  auto bytes = encode_descriptor(wrapped);
  for (int k = 0; k < 8; ++k)
    bytes[11 + k] = static_cast<uint8_t>(d.addr >> (8 * k));
  return rv_rdma_grant{1, bytes, 30000, total};
}

caf::behavior hostile_owner(caf::event_based_actor*, std::shared_ptr<owner_log> log,
                            bool truncate, hostile_key key) {
  return {
    [=](rv_acquire_atom, const std::string& body) -> caf::result<std::string> {
      ++log->acquires;
      auto req = decode<rv_acquire_request>(body);
      if (!req)
        return req.error();
      rv_acquire_response r;
      switch (req->handle.lo) {
        case huge_total:
          r.ready = rv_ready{1, 1, 524288, chunks_for(top, 524288), top};
          break;
        case lying_count:
          r.ready = rv_ready{1, 1, 524288, 1, 3 * 524288};
          break;
        case oversized:
        case truncated:
          r.ready = rv_ready{1, 1, 524288, 2, 2 * 524288};
          break;
        case garbage:
          return std::string{"\x01not json"};
        case rdma_huge:
        case rdma_wrapping:
        case rdma_mismatch:
          r.rdma = hostile_grant(req->handle.lo, key);
          break;
        default:
          r.rdma = rv_rdma_grant{1, {1, 2, 3}, 30000, top};
      }
      return encode(r);
    },
    [=](rv_acquire_eager_atom, const std::string& body) -> caf::result<std::string, chunk_bytes> {
      ++log->eager_acquires;
      auto req = decode<rv_acquire_request>(body);
      if (!req)
        return req.error();
      return hostile_eager_answer(req->handle);
    },
    [=](rv_pull_atom, const std::string&) {
      // 1.5 chunks, or 100 bytes: never the 512 KiB announced.
      char* fill = nullptr;
      auto c = chunk_bytes::allocate(truncate ? 100 : 524288 + 262144, &fill);
      std::memset(fill, 0x5a, c.size());
      return c;
    },
    [=](rv_detach_atom, const std::string&) {
      ++log->detaches;
      return std::string{"{}"};
    },
    [=](rv_lease_renew_atom, const std::string&) { return std::string{"{}"}; },
    [=](rv_release_atom, const std::string&) { return std::string{"{}"}; },
  };
}

/// A plain CAF system whose published gateway answers a hello with the
/// hostile owner; a ferry node in this process connects to it and pulls.
struct HostileOwner : ::testing::Test {
  /// `ucx_address` and `key`: the hostile node says it has UCX.
  explicit HostileOwner(bool truncate = false, std::vector<char> ucx_address = {},
                        hostile_key key = {}, node_config lc = local_config())
    : sys(cfg), local(lc) {
    owner = sys.spawn(hostile_owner, log, truncate, key);
    auto o = owner;
    // Typed as a ferry gateway, which is what a node's connect checks for.
    gateway = sys.spawn([o, ucx_address](gateway_actor::pointer self, int) -> gateway_actor::behavior_type {
      auto refuse = [] { return make_error(errc::invalid_argument, "hostile"); };
      return {
        [=](hello_atom, peer_hello&) -> caf::result<peer_hello> {
          peer_hello h;
          h.worker_id = hostile_worker;
          h.capabilities = {"chunked"};
          if (!ucx_address.empty()) {
            h.capabilities.push_back("ucx");
            h.ucx_address = ucx_address;
          }
          h.host = "127.0.0.1";
          h.gateway = caf::actor_cast<caf::actor>(self);
          h.owner = o;
          return h;
        },
        [=](add_peer_atom, peer_hello&, uint64_t) -> caf::result<caf::ok_atom> {
          return refuse();
        },
        [=](control_ready_atom, uint64_t) {},
        [=](control_lost_atom, uint64_t) {},
        [=](members_atom) -> caf::result<std::vector<std::string>> { return refuse(); },
        [=](member_atom, const std::string&) {},
        [=](ucx_goodbye_atom, uint64_t) {},
        [=](ucx_fence_atom, uint64_t) -> caf::result<bool> { return refuse(); },
        [=](lookup_atom, uint64_t) -> caf::result<caf::actor, bool> { return refuse(); },
        [=](spawn_atom, const std::string&, const caf::message&) -> caf::result<caf::actor> {
          return refuse();
        },
        [=](adopt_atom, const data_handle&, const std::string&) -> caf::result<data_handle> {
          return refuse();
        },
        [=](path_probe_atom, const data_handle&) -> caf::result<std::string> {
          return refuse();
        },
        [=](stop_work_atom) -> caf::result<caf::ok_atom> { return refuse(); },
        [=](staging_source_atom, uint64_t) -> caf::result<caf::actor> { return refuse(); },
        [=](stat_atom) -> caf::result<std::string> { return refuse(); },
      };
    }, 0);
    auto port = sys.middleman().publish(gateway, 0, "127.0.0.1");
    if (!port)
      throw std::runtime_error(sys.render(port.error()));
    if (auto err = local.start())
      throw std::runtime_error(describe(err));
    auto hello = local.connect("127.0.0.1:" + std::to_string(*port));
    if (!hello)
      throw std::runtime_error(describe(hello.error()));
  }

  ~HostileOwner() override {
    local.stop();
    caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gateway, caf::exit_reason::user_shutdown);
  }

  static node_config local_config() {
    node_config c;
    c.listen = false;
    c.request_timeout_ms = 5000;
    return c;
  }

  plain_config cfg;
  caf::actor_system sys;
  std::shared_ptr<owner_log> log = std::make_shared<owner_log>();
  caf::actor owner;
  gateway_actor gateway;
  node local;
};

struct HostileTruncatingOwner : HostileOwner {
  HostileTruncatingOwner() : HostileOwner(true) {}
};

#ifdef FERRY_WITH_UCX
/// The hostile node's UCX side: a real worker whose address goes in its
/// hello and a real registration whose key goes in its grants. Nobody
/// progresses the worker: a GET the consumer started would never finish.
struct hostile_ucx {
  hostile_ucx() {
    ::setenv("UCX_TLS", "tcp", 1); // before any context of this process
    ::setenv("UCX_NET_DEVICES", "lo", 1);
    auto c = ucx_context::create();
    if (!c)
      throw std::runtime_error(c.error_message());
    context.emplace(std::move(*c));
    auto w = ucx_worker::create(*context);
    if (!w)
      throw std::runtime_error(w.error_message());
    worker.emplace(std::move(*w));
    auto m = ucx_memory::map(*context, 1 << 20, false);
    if (!m)
      throw std::runtime_error(m.error_message());
    memory.emplace(std::move(*m));
  }
  hostile_key key() const { return {memory->address(), memory->rkey()}; }
  std::optional<ucx_context> context;
  std::optional<ucx_worker> worker;
  std::optional<ucx_memory> memory;
};

struct HostileRdmaOwner : HostileOwner {
  HostileRdmaOwner() : HostileRdmaOwner(std::make_unique<hostile_ucx>()) {}
  explicit HostileRdmaOwner(std::unique_ptr<hostile_ucx> u)
    : HostileOwner(false, u->worker->address(), u->key(), rdma_config()), ucx(std::move(u)) {}
  static node_config rdma_config() {
    auto c = local_config();
    c.metrics_port = 0;
    c.rdma_emulated_gets = true; // it offers GETs to this tcp peer (one_sided_reads.hpp)
    return c;
  }
  std::unique_ptr<hostile_ucx> ucx;
};
#endif

} // namespace

// A peer whose hello says it lost this node (it saw the connection go and
// ended everything, while this node's side held) ends its old session
// here: its leases go; a hello that does not say so changes nothing.
TEST_F(HostileConsumer, AHelloSayingItLostThisNodeEndsItsLeasesFromBefore) {
  auto a = stage(2 * 512 * 1024);
  rv_acquire_request acq;
  acq.handle = a;
  acq.lease_ms = 0; // no deadline: only this peer, or its going, ends it
  ASSERT_TRUE(call<std::string>(rv_acquire_atom::value, encode(acq)));
  ASSERT_EQ(owner_stat()["leases"], 1);

  auto hello = [&](std::vector<std::string> caps) {
    peer_hello mine;
    mine.worker_id = 0xbadbadbad;
    mine.gateway = dummy;
    mine.owner = dummy;
    mine.capabilities = std::move(caps);
    peer_hello theirs;
    self->request(gateway, 10s, hello_atom::value, mine)
      .receive([&](peer_hello& h) { theirs = std::move(h); },
               [&](caf::error& err) { ADD_FAILURE() << sys.render(err); });
    return theirs;
  };
  auto node_id = hello({}).worker_id;
  ASSERT_NE(node_id, 0u);
  EXPECT_EQ(owner_stat()["leases"], 1); // a hello again: the session holds
  hello({lost_capability(node_id + 1)});
  EXPECT_EQ(owner_stat()["leases"], 1); // another node lost: not ours

  hello({"chunked", lost_capability(node_id)});
  nlohmann::json o;
  for (int i = 0; i < 200; ++i) { // the owner hears it from the gateway
    o = owner_stat();
    if (o["leases"] == 0)
      break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(o["leases"], 0);
  EXPECT_EQ(o["slots"], 1); // the stager's reference stays
  // The new session works: a lease taken now is this peer's.
  ASSERT_TRUE(call<std::string>(rv_acquire_atom::value, encode(acq)));
  EXPECT_EQ(owner_stat()["leases"], 1);
}

TEST_F(HostileOwner, LiesAboutSizesAndChunksFailTheGetCleanly) {
  blocking_client client{local};
  struct row {
    scenario s;
    errc expected;
    bool detached; // the consumer gave the granted lease back
  };
  const row rows[] = {
    {huge_total, errc::payload_too_large, true},
    {lying_count, errc::protocol_violation, true},
    {oversized, errc::protocol_violation, true},
    {garbage, errc::malformed_body, false},
    {huge_rdma, errc::protocol_violation, true},
    {eager_longer, errc::protocol_violation, true},
    {eager_larger, errc::protocol_violation, true},
    {eager_huge, errc::protocol_violation, true},
    {eager_unmarked, errc::protocol_violation, true},
  };
  for (auto& r : rows) {
    SCOPED_TRACE(static_cast<int>(r.s));
    auto before = log->detaches.load();
    auto got = client.get(data_handle{hostile_worker, r.s});
    ASSERT_FALSE(got);
    EXPECT_TRUE(is(got.error(), r.expected)) << describe(got.error());
    if (r.detached) { // one-way: wait for it (bounded)
      for (int i = 0; i < 500 && log->detaches.load() == before; ++i)
        std::this_thread::sleep_for(2ms);
      EXPECT_EQ(log->detaches.load(), before + 1);
    }
  }
  // Every get asked eagerly first; the plain scenarios, answered as by an
  // owner of an older ferry, acquired plainly once more.
  EXPECT_EQ(log->eager_acquires.load(), 9);
  EXPECT_EQ(log->acquires.load(), 5);
  // A well-formed eager answer is the whole get.
  auto fine = client.get(data_handle{hostile_worker, eager_ok});
  ASSERT_TRUE(fine) << describe(fine.error());
  EXPECT_EQ(fine->bytes, byte_buffer(100, 0x5a));
  EXPECT_EQ(log->acquires.load(), 5);
  // The node is unharmed: it still stages and serves its own payloads.
  auto bytes = test::payload(3 * 512 * 1024);
  auto h = client.register_data(bytes);
  ASSERT_TRUE(h);
  auto again = client.get(*h);
  ASSERT_TRUE(again) << describe(again.error());
  EXPECT_EQ(again->bytes, bytes);
  ASSERT_TRUE(client.release(*h, again->lease_id));
}

TEST_F(HostileTruncatingOwner, AShortChunkFailsTheGet) {
  blocking_client client{local};
  auto got = client.get(data_handle{hostile_worker, truncated});
  ASSERT_FALSE(got);
  EXPECT_TRUE(is(got.error(), errc::protocol_violation)) << describe(got.error());
  EXPECT_NE(describe(got.error()).find("has 100 bytes"), std::string::npos)
    << describe(got.error());
}

TEST(HostileEndpoint, ConnectingToWhatIsNoGatewayFailsWithinTheRequestTimeout) {
  // A plain CAF system publishes an ordinary actor, and a socket accepts
  // connections and never says a word: neither is a ferry node.
  plain_config cfg;
  caf::actor_system sys{cfg};
  auto plain = sys.spawn([](caf::event_based_actor*, int) { return caf::behavior{[](int) {}}; },
                         0);
  auto published = sys.middleman().publish(plain, 0, "127.0.0.1");
  ASSERT_TRUE(published) << sys.render(published.error());
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(silent, 64), 0); // room to count every dial (below)
  socklen_t len = sizeof(addr);
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len);
  node_config nc;
  nc.listen = false;
  nc.request_timeout_ms = 1000;
  node n{nc};
  ASSERT_FALSE(n.start());
  auto wrong = n.connect("127.0.0.1", *published);
  ASSERT_FALSE(wrong);
  EXPECT_NE(describe(wrong.error()).find("not a ferry node's gateway"), std::string::npos)
    << describe(wrong.error());
  auto mute = n.connect("127.0.0.1", ntohs(addr.sin_port));
  ASSERT_FALSE(mute);
  EXPECT_NE(describe(mute.error()).find("cannot connect"), std::string::npos)
    << describe(mute.error());
  // The silent listener was dialled a bounded number of times (the probe
  // and at most three dials): each dial takes a slot of its accept queue,
  // and on a full queue CAF's connect() would block the middleman for minutes.
  ::fcntl(silent, F_SETFL, O_NONBLOCK);
  int dials = 0;
  for (int fd; (fd = ::accept(silent, nullptr, nullptr)) >= 0; ++dials)
    ::close(fd);
  EXPECT_GE(dials, 1);
  EXPECT_LE(dials, 4);
  n.stop();
  ::close(silent);
  caf::anon_send_exit(plain, caf::exit_reason::user_shutdown);
}

#ifdef FERRY_WITH_UCX
TEST_F(HostileRdmaOwner, RdmaGrantsWithHugeWrappingOrMismatchedLengthsFailCleanly) {
  blocking_client client{local};
  struct row {
    scenario s;
    errc expected;
    int detaches;           // leases the consumer gave back
    const char* decode_errors; // descriptors refused so far (the path metric)
  };
  const row rows[] = {
    // Allocated as asked, 2^60 bytes cannot be had: an error reply.
    {rdma_huge, errc::payload_too_large, 1, nullptr},
    // Refused before any allocation or GET: the fallback's acquire, answered
    // RDMA once more, is the second descriptor.
    {rdma_wrapping, errc::protocol_violation, 2, "1"},
    {rdma_mismatch, errc::protocol_violation, 2, "2"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(static_cast<int>(r.s));
    auto before = log->detaches.load();
    auto got = client.get(data_handle{hostile_worker, r.s});
    ASSERT_FALSE(got);
    EXPECT_TRUE(is(got.error(), r.expected)) << describe(got.error());
    for (int i = 0; i < 500 && log->detaches.load() < before + r.detaches; ++i)
      std::this_thread::sleep_for(2ms);
    EXPECT_EQ(log->detaches.load(), before + r.detaches);
    if (r.decode_errors) {
      auto text = test::scrape_metrics(local.metrics_port());
      EXPECT_EQ(test::series_value(
                  text, R"(ferry_rendezvous_rdma_path_total{path="chunked",reason="decode_error"})"),
                std::stod(r.decode_errors));
    }
  }
  // The consumer asked each time with an offer: the hostile node's UCX was
  // taken at its word, so the grants were read and judged.
  auto text = test::scrape_metrics(local.metrics_port());
  EXPECT_LE(test::series_value( // -1: never counted
              text, R"(ferry_rendezvous_rdma_path_total{path="chunked",reason="no_offer"})"),
            0);
  // The node is unharmed.
  auto bytes = test::payload(3 * 512 * 1024);
  auto h = client.register_data(bytes);
  ASSERT_TRUE(h);
  auto again = client.get(*h);
  ASSERT_TRUE(again) << describe(again.error());
  EXPECT_EQ(again->bytes, bytes);
}
#endif
