// Deterministic actor tests: owner, lease reaper, gateway, consumer service
// and consumers in one actor system driven by CAF's test coordinator, with
// virtual time for deadlines.
#include <algorithm>
#include <prometheus/counter.h>

#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"
#include "tests/actors/actor_fixture.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

using ActorFixture = ferry::test::ActorFixture;
using ferry::test::chunk;
using ferry::test::worker;

using ActorChunked = ActorFixture;
using ActorLease = ActorFixture;

} // namespace

TEST_F(ActorChunked, GetPullsEveryChunkThroughTheWindow) {
  auto h = stage(3 * chunk + 1);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto& bytes = std::get<0>(*r.values);
  ASSERT_EQ(bytes.size(), 3 * chunk + 1);
  for (size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], static_cast<char>(i % 251)) << i;
  EXPECT_EQ(om.chunks_served->Value(), 4);
  EXPECT_EQ(cm.chunks_pulled->Value(), 4);
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::no_offer), 1);
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::not_configured), 1);
  // The lease is held until the caller ends it.
  EXPECT_NE(owner_stat().find("\"leases\":1"), std::string::npos);
  auto rel = call<uint64_t, bool>(ctx->consumer, release_atom::value, h,
                                  std::get<1>(*r.values));
  ASSERT_TRUE(rel.values);
  EXPECT_TRUE(std::get<1>(*rel.values));
  EXPECT_NE(owner_stat().find("\"slots\":0"), std::string::npos);
}

TEST_F(ActorChunked, GetIntoWritesTheCallerBuffer) {
  auto h = stage(2 * chunk);
  byte_buffer dest(2 * chunk + 10, 'x');
  auto r = call<uint64_t, uint64_t>(ctx->consumer, get_into_atom::value, h,
                                    mutable_bytes{dest.data(), dest.size()});
  ASSERT_TRUE(r.values) << describe(r.error);
  EXPECT_EQ(std::get<0>(*r.values), 2 * chunk);
  EXPECT_EQ(dest[chunk + 5], static_cast<char>((chunk + 5) % 251));
  EXPECT_EQ(dest[2 * chunk], 'x');
}

TEST_F(ActorChunked, GetIntoATooSmallBufferFailsAndDetaches) {
  auto h = stage(2 * chunk);
  byte_buffer dest(chunk);
  auto r = call<uint64_t, uint64_t>(ctx->consumer, get_into_atom::value, h,
                                    mutable_bytes{dest.data(), dest.size()});
  ASSERT_FALSE(r.values);
  EXPECT_TRUE(is(r.error, errc::payload_too_large)) << describe(r.error);
  sched.run();
  EXPECT_NE(owner_stat().find("\"leases\":0"), std::string::npos);
  EXPECT_EQ(om.chunks_served->Value(), 0); // nothing was pulled
}

TEST_F(ActorChunked, UnknownHandleAndUnknownOwner) {
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value,
                                       data_handle{worker, 999});
  EXPECT_TRUE(is(r.error, errc::unknown_handle)) << describe(r.error);
  auto o = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value,
                                       data_handle{worker + 1, 1});
  EXPECT_TRUE(is(o.error, errc::unknown_owner)) << describe(o.error);
  EXPECT_EQ(cm.gets_failed->Value(), 2);
}

TEST_F(ActorChunked, AConsumerThatFinishedCleanlyServesTheNextGet) {
  for (size_t n : {chunk / 2, 3 * chunk, 2 * chunk + 7}) {
    auto h = stage(n);
    auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
    ASSERT_TRUE(r.values) << describe(r.error);
    auto& bytes = std::get<0>(*r.values);
    ASSERT_EQ(bytes.size(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(bytes[i], static_cast<char>(i % 251)) << n << " @" << i;
  }
  EXPECT_EQ(cm.consumers_started->Value(), 1);
  // Its answered requests left no timer behind (CAF 0.17 keeps them armed
  // for a live actor unless cancelled): once the holds went (a quarter of
  // the 30 s lease after the gets), the reaper, armed by the leases'
  // deadlines, disarms at its next tick since the held leases have none.
  sched.run();
  sched.advance_time(7600ms);
  sched.run();
  EXPECT_EQ(cm.holds_sent->Value(), 3);
  sched.advance_time(100ms);
  sched.run();
  EXPECT_FALSE(sched.has_pending_timeout());
  // A failed get ends its consumer (replies of that get may still come);
  // the next get starts a fresh one and is served whole.
  auto bad = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value,
                                         data_handle{worker, 999});
  EXPECT_TRUE(is(bad.error, errc::unknown_handle)) << describe(bad.error);
  auto h = stage(chunk + 1);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  EXPECT_EQ(std::get<0>(*r.values).size(), chunk + 1);
  EXPECT_EQ(cm.consumers_started->Value(), 2);
  EXPECT_EQ(cm.gets_ok->Value(), 4);
}

TEST_F(ActorChunked, AnExceptionInAConsumerFailsItsGetAndGivesItsLeaseBack) {
  // CAF 0.17 leaves the promise of an actor that threw unanswered: without
  // the consumer's handler the caller waits out its own timeout, and the
  // lease stays until its deadline.
  caf::anon_send_exit(ctx->consumer, caf::exit_reason::user_shutdown);
  sched.run();
  auto cc = consumer_ctx();
  cc.cfg.test_throw_on_acquire_answer = true;
  ctx->consumer = spawn_consumer_service(sys, cc);
  sched.run();
  auto h = stage(3 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_FALSE(r.values);
  EXPECT_TRUE(is(r.error, errc::internal_error)) << describe(r.error);
  EXPECT_NE(describe(r.error).find("thrown by the test hook"), std::string::npos)
    << describe(r.error);
  EXPECT_EQ(cm.gets_failed->Value(), 1);
  sched.run();
  EXPECT_NE(owner_stat().find("\"leases\":0"), std::string::npos) << owner_stat();
  EXPECT_NE(owner_stat().find("\"slots\":1"), std::string::npos) << owner_stat();
}

TEST_F(ActorChunked, TheGatewayKeepsThePeerDirectoryInStep) {
  constexpr uint64_t peer = 9;
  // A stand-in for the peer's gateway, which the gateway monitors.
  auto peer_gateway = sys.spawn([](caf::event_based_actor*, int) {
    return caf::behavior{[](int) {}};
  }, 0);
  peer_hello hello;
  hello.worker_id = peer;
  hello.gateway = peer_gateway;
  hello.owner = caf::actor_cast<caf::actor>(ctx->owner);
  auto added = call<caf::ok_atom>(gw, add_peer_atom::value, hello, uint64_t{0});
  ASSERT_TRUE(added.values) << describe(added.error);
  auto known = peers->find(peer);
  ASSERT_TRUE(known);
  EXPECT_EQ(known->owner, hello.owner);
  EXPECT_FALSE(known->ucx_gets); // no UCX engine on this node
  EXPECT_FALSE(peers->find(worker + 1)); // never announced
  // The peer goes: the directory forgets it with the gateway, and a get of
  // its handle fails as an unknown owner.
  caf::anon_send_exit(peer_gateway, caf::exit_reason::kill);
  sched.run();
  EXPECT_FALSE(peers->find(peer));
  auto o = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value,
                                       data_handle{peer, 1});
  EXPECT_TRUE(is(o.error, errc::unknown_owner)) << describe(o.error);
}

TEST_F(ActorChunked, MalformedBodiesGetErrorRepliesAndTheOwnerLivesOn) {
  auto r = call<std::string>(ctx->owner, rv_acquire_atom::value,
                             std::string{"{\"handle\":"});
  EXPECT_TRUE(is(r.error, errc::malformed_body)) << describe(r.error);
  auto p = call<chunk_bytes>(ctx->owner, rv_pull_atom::value, std::string{"[]"});
  EXPECT_TRUE(is(p.error, errc::malformed_body)) << describe(p.error);
  auto h = stage(10);
  auto ok = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  EXPECT_TRUE(ok.values) << describe(ok.error);
}

TEST_F(ActorChunked, RefDetachAndMetadata) {
  auto h = stage(chunk);
  auto md = call<uint64_t, uint64_t, bool>(ctx->consumer, metadata_atom::value, h);
  ASSERT_TRUE(md.values);
  EXPECT_EQ(std::get<0>(*md.values), chunk);
  EXPECT_EQ(std::get<1>(*md.values), 1u);
  auto ref = call<uint64_t>(ctx->consumer, ref_atom::value, h);
  EXPECT_EQ(std::get<0>(*ref.values), 2u);
  auto g = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  auto lease = std::get<1>(*g.values);
  auto d = call<caf::ok_atom>(ctx->consumer, detach_atom::value, h, lease);
  EXPECT_TRUE(d.values);
  auto d2 = call<caf::ok_atom>(ctx->consumer, detach_atom::value, h, lease);
  EXPECT_TRUE(is(d2.error, errc::unknown_lease)) << describe(d2.error);
}

TEST_F(ActorChunked, DeadOwnerFailsTheGetAtOnce) {
  // The owner stops answering pulls from chunk 2 on; then it dies.
  caf::anon_send_exit(ctx->owner, caf::exit_reason::user_shutdown);
  sched.run();
  owner_config stalled = make_owner_config();
  stalled.stall_pulls_from = 2;
  ctx->owner = spawn_owner(sys, worker, stalled, &om);
  sched.run();
  auto h = stage(4 * chunk);
  auto pending = start_call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  EXPECT_FALSE(pending->done());
  EXPECT_EQ(cm.chunks_pulled->Value(), 2);
  caf::anon_send_exit(ctx->owner, caf::exit_reason::kill);
  sched.run();
  ASSERT_TRUE(pending->done());
  EXPECT_TRUE(is(pending->error, errc::peer_down)) << describe(pending->error);
}

TEST_F(ActorLease, ChunkedLeaseDeadlineIsEnforcedByTheReaper) {
  auto h = stage(2 * chunk); // one pull leaves the transfer open
  rv_acquire_request req;
  req.handle = h;
  req.lease_ms = 500;
  auto a = call<std::string>(ctx->owner, rv_acquire_atom::value, encode(req));
  ASSERT_TRUE(a.values) << describe(a.error);
  auto ready = decode<rv_acquire_response>(std::get<0>(*a.values))->ready;
  ASSERT_TRUE(ready);
  EXPECT_TRUE(sched.has_pending_timeout()); // the reaper is armed
  // A pull at 300 ms renews the deadline to 800 ms.
  sched.advance_time(300ms);
  sched.run();
  auto p = call<chunk_bytes>(ctx->owner, rv_pull_atom::value,
                             encode(rv_pull_request{ready->transfer_id, 0}));
  ASSERT_TRUE(p.values);
  for (int i = 0; i < 4; ++i) { // to 700 ms
    sched.advance_time(100ms);
    sched.run();
  }
  EXPECT_EQ(om.leases_expired->Value(), 0);
  for (int i = 0; i < 2; ++i) { // to 900 ms
    sched.advance_time(100ms);
    sched.run();
  }
  EXPECT_EQ(om.leases_expired->Value(), 1);
  EXPECT_NE(owner_stat().find("\"leases\":0"), std::string::npos);
  // Nothing left with a deadline: the reaper disarms.
  sched.advance_time(100ms);
  sched.run();
  EXPECT_FALSE(sched.has_pending_timeout());
}

TEST_F(ActorLease, AFinishedGetsLeaseLosesItsDeadlineWhenItsHoldComesAndNotBefore) {
  auto h = stage(chunk);
  auto g = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(g.values);
  sched.run();
  EXPECT_NE(owner_stat().find("\"leases\":1"), std::string::npos);
  // The lease keeps its deadline (30 s) until the consumer service sends the
  // hold, a quarter of it after the get: the reaper stays armed till then.
  EXPECT_EQ(cm.holds_sent->Value(), 0);
  sched.advance_time(7400ms);
  sched.run();
  EXPECT_EQ(cm.holds_sent->Value(), 0);
  EXPECT_TRUE(sched.has_pending_timeout());
  sched.advance_time(200ms);
  sched.run();
  EXPECT_EQ(cm.holds_sent->Value(), 1);
  // Held now: the reaper's next tick finds no deadline and disarms.
  sched.advance_time(100ms);
  sched.run();
  EXPECT_FALSE(sched.has_pending_timeout());
  // Held for an hour of virtual time, the lease is still there to release.
  sched.advance_time(1h);
  sched.run();
  auto r = call<uint64_t, bool>(ctx->consumer, release_atom::value, h,
                                std::get<1>(*g.values));
  ASSERT_TRUE(r.values) << describe(r.error);
  EXPECT_TRUE(std::get<1>(*r.values)); // freed
  EXPECT_EQ(om.leases_expired->Value(), 0);
}

TEST_F(ActorLease, AnEagerAnswerThatNeverReachesItsConsumerEndsWithItsLeaseDeadline) {
  // The answer lost on the way (a connection gone, or the consumer's own
  // timeout first): nobody will hold, detach or release that lease.
  auto h = stage(600);
  rv_acquire_request req;
  req.handle = h;
  req.eager_max = 1 << 20;
  req.lease_ms = 500;
  req.holds = true; // a consumer that holds its leases when done
  auto a = call<std::string, chunk_bytes>(ctx->owner, rv_acquire_eager_atom::value,
                                          encode(req));
  ASSERT_TRUE(a.values) << describe(a.error);
  ASSERT_EQ(std::get<1>(*a.values).size(), 600u); // the payload went with it
  EXPECT_NE(owner_stat().find("\"transfers\":0"), std::string::npos);
  EXPECT_NE(owner_stat().find("\"leases\":1"), std::string::npos);
  for (int i = 0; i < 6; ++i) { // to 600 ms
    sched.advance_time(100ms);
    sched.run();
  }
  EXPECT_EQ(om.leases_expired->Value(), 1);
  EXPECT_NE(owner_stat().find("\"leases\":0"), std::string::npos);
  // The stager's reference is left: the payload is there for the next get.
  auto g = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(g.values) << describe(g.error);
  EXPECT_EQ(std::get<0>(*g.values).size(), 600u);
}

TEST_F(ActorLease, TimeToLiveFreesTheSlot) {
  auto h = stage(chunk, 250);
  EXPECT_TRUE(sched.has_pending_timeout());
  for (int i = 0; i < 3; ++i) {
    sched.advance_time(100ms);
    sched.run();
  }
  EXPECT_EQ(om.slots_expired->Value(), 1);
  auto md = call<uint64_t, uint64_t, bool>(ctx->consumer, metadata_atom::value, h);
  EXPECT_TRUE(is(md.error, errc::unknown_handle));
}

namespace {

/// An owner that never answers pulls from chunk 1 on.
struct StalledPulls : ActorFixture {
  StalledPulls() : ActorFixture(stalled_config()) {}
  static owner_config stalled_config() {
    auto c = make_owner_config();
    c.stall_pulls_from = 1;
    return c;
  }
};

using ActorLeaseStalled = StalledPulls;

/// An actor that asks `consumer` for `h` with no timeout of its own and
/// fails the test, saying `if_answered`, should the bytes reach it.
caf::actor spawn_get_caller(caf::actor_system& sys, const consumer_service_actor& consumer,
                            const data_handle& h, const char* if_answered) {
  return sys.spawn(
    [=](caf::event_based_actor* self, int) {
      self->request(consumer, caf::infinite, get_atom::value, h)
        .then([=](byte_buffer&, uint64_t) { ADD_FAILURE() << if_answered; },
              [](caf::error&) {});
    },
    0);
}

} // namespace

TEST_F(ActorLeaseStalled, ACallerThatGoesAwayTakesItsGetsLeaseBack) {
  auto h = stage(4 * chunk);
  auto caller = spawn_get_caller(sys, ctx->consumer, h, "a stalled get finished");
  sched.run();
  EXPECT_NE(owner_stat().find("\"leases\":1"), std::string::npos);
  caf::anon_send_exit(caller, caf::exit_reason::user_shutdown);
  sched.run();
  // The consumer saw its caller go, stopped, and detached the lease.
  EXPECT_NE(owner_stat().find("\"leases\":0"), std::string::npos) << owner_stat();
  EXPECT_NE(owner_stat().find("\"transfers\":0"), std::string::npos);
  EXPECT_EQ(cm.gets_failed->Value(), 1);
  EXPECT_EQ(std::get<0>(*call<uint64_t, uint64_t, bool>(ctx->consumer,
                                                        metadata_atom::value, h)
                           .values),
            4 * chunk); // the payload stays staged
}

TEST_F(ActorLeaseStalled, TheServicesEndStopsAConsumerOutOnAGetAndFailsItsGet) {
  // A consumer out on a get (or one waiting out the answers of a failed get
  // from a peer that went) is the service's: it stops with it, and a node's
  // stop, which waits for every actor, does not wait for its requests'
  // timeouts (a 30 s stall seen when an owner exited under a GET). The get
  // it was on fails at once: its caller does not wait out its own timeout.
  auto h = stage(4 * chunk);
  auto pending = start_call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  EXPECT_FALSE(pending->done());
  EXPECT_NE(owner_stat().find("\"leases\":1"), std::string::npos) << owner_stat();
  auto before = sys.registry().running();
  caf::anon_send_exit(ctx->consumer, caf::exit_reason::user_shutdown);
  sched.run();
  ASSERT_TRUE(pending->done());
  EXPECT_TRUE(is(pending->error, errc::draining)) << describe(pending->error);
  EXPECT_EQ(cm.gets_failed->Value(), 1);
  // The service and its consumer at least (and the caller, answered).
  EXPECT_LE(sys.registry().running() + 2, before);
}

TEST_F(ActorLease, ACallerGoneWhileItsOwnerIsLookedUpStartsNoTransfer) {
  auto h = stage(4 * chunk);
  auto caller = spawn_get_caller(sys, ctx->consumer, h, "a gone caller got bytes");
  // Until the consumer asked the gateway for the owner (a local owner is
  // looked up there, not in the peer directory).
  auto* gateway = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(gw));
  auto asked = [&] {
    return std::find(sched.jobs.begin(), sched.jobs.end(), gateway) != sched.jobs.end();
  };
  for (int i = 0; i < 20 && !asked(); ++i)
    sched.run_once();
  ASSERT_TRUE(asked());
  // The caller goes before the gateway answers: its down message reaches
  // the consumer ahead of the owner.
  caf::anon_send_exit(caller, caf::exit_reason::user_shutdown);
  ASSERT_TRUE(sched.prioritize(caller));
  sched.run_once();
  sched.run();
  // No transfer started, so no lease waits for a caller that is gone.
  EXPECT_NE(owner_stat().find("\"leases\":0"), std::string::npos) << owner_stat();
  EXPECT_NE(owner_stat().find("\"transfers\":0"), std::string::npos) << owner_stat();
  EXPECT_EQ(om.chunks_served->Value(), 0);
  // Not even acquired: an acquire counts the path it offers.
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::not_configured), 0);
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::no_offer), 0);
  EXPECT_EQ(cm.gets_failed->Value(), 1);
  EXPECT_EQ(cm.gets_ok->Value(), 0);
}

TEST_F(ActorChunked, APayloadOfOneChunkComesWithTheAcquiresAnswer) {
  auto h = stage(chunk - 24);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto& bytes = std::get<0>(*r.values);
  ASSERT_EQ(bytes.size(), chunk - 24);
  for (size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], static_cast<char>(i % 251)) << i;
  EXPECT_EQ(om.eager_answers->Value(), 1);
  EXPECT_EQ(om.eager_bytes->Value(), static_cast<double>(chunk - 24));
  EXPECT_EQ(om.chunks_served->Value(), 0); // no pull
  EXPECT_EQ(cm.eager_gets->Value(), 1);
  EXPECT_EQ(cm.chunks_pulled->Value(), 0);
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::no_offer), 1);
  // Its lease stays, as after a last pull, until the caller ends it.
  EXPECT_NE(owner_stat().find("\"leases\":1"), std::string::npos);
  EXPECT_NE(owner_stat().find("\"transfers\":0"), std::string::npos);
  auto rel = call<uint64_t, bool>(ctx->consumer, release_atom::value, h,
                                  std::get<1>(*r.values));
  ASSERT_TRUE(rel.values);
  EXPECT_TRUE(std::get<1>(*rel.values));
  // Two chunks are pulled as before.
  auto big = stage(chunk + 1);
  auto b = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, big);
  ASSERT_TRUE(b.values) << describe(b.error);
  EXPECT_EQ(std::get<0>(*b.values).size(), chunk + 1);
  EXPECT_EQ(om.eager_answers->Value(), 1);
  EXPECT_EQ(cm.chunks_pulled->Value(), 2);
}

TEST_F(ActorChunked, TheEagerAnswerTakesTheSmallerOfBothLimits) {
  auto h = stage(600);
  auto ask = [&](uint64_t eager_max) {
    rv_acquire_request req;
    req.handle = h;
    req.eager_max = eager_max;
    auto a = call<std::string, chunk_bytes>(ctx->owner, rv_acquire_eager_atom::value,
                                            encode(req));
    EXPECT_TRUE(a.values) << describe(a.error);
    auto answer = decode<rv_acquire_response>(std::get<0>(*a.values));
    EXPECT_TRUE(answer && answer->ready);
    return std::make_pair(answer->ready->eager, std::get<1>(*a.values).size());
  };
  EXPECT_EQ(ask(599), std::make_pair(false, size_t{0})); // the consumer's limit
  EXPECT_EQ(ask(0), std::make_pair(false, size_t{0}));
  EXPECT_EQ(ask(600), std::make_pair(true, size_t{600}));
  EXPECT_EQ(om.eager_answers->Value(), 1);
  // An owner with eager answers off answers every eager acquire plainly,
  // and the consumer pulls.
  caf::anon_send_exit(ctx->owner, caf::exit_reason::user_shutdown);
  sched.run();
  auto off = make_owner_config();
  off.eager_max = 0;
  ctx->owner = spawn_owner(sys, worker, off, &om);
  sched.run();
  h = stage(600);
  EXPECT_EQ(ask(1 << 20), std::make_pair(false, size_t{0}));
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  EXPECT_EQ(std::get<0>(*r.values).size(), 600u);
  EXPECT_EQ(cm.chunks_pulled->Value(), 1);
  EXPECT_EQ(cm.eager_gets->Value(), 0);
}
