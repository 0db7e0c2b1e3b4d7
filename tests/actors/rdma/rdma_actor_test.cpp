// The consumer's RDMA path on CAF's test coordinator, without UCX: the
// owner of worker 8 stages in registered memory from a fake mapping, and
// the consumer reads it through fake_rdma_reader (tests/support). Each
// test drives one rule: the GET, each fallback exactly once, the
// receiver's limit before any allocation, the held lease, the writer.
#include <atomic>

#include <prometheus/counter.h>

#include "actors/rdma/arena_pool_actor.hpp"
#include "actors/rendezvous/bulk_copier.hpp"
#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"
#include "tests/actors/actor_fixture.hpp"
#include "tests/support/fake_rdma.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

using ferry::test::chunk;
using ferry::test::fake_rdma_faults;
using ferry::test::fake_rdma_memory;
using ferry::test::fake_rdma_reader;

template <class F>
fake_rdma_faults faults_where(F set) {
  fake_rdma_faults f;
  set(f);
  return f;
}

constexpr uint64_t remote = 8; // the owner the consumer GETs from
constexpr uint64_t MiB = 1 << 20;

/// A bulk copier that copies at once (on the test coordinator) and counts
/// the jobs it was given.
caf::behavior counting_copier(caf::event_based_actor*, std::shared_ptr<std::atomic<int>> jobs) {
  return {
    [=](copy_atom, const copy_job& job) {
      ++*jobs;
      run_copy(job);
      return caf::ok_atom::value;
    },
  };
}
constexpr auto rdma_lease = 4000ms; // a hold is deferred from 4 s on

struct ActorRdma : ferry::test::ActorFixture {
  ActorRdma() : remote_paths(remote_registry), remote_om(remote_registry, remote_paths) {
    arena_pool_config pc;
    pc.initial_arena_bytes = 1 << 20;
    pc.max_arena_bytes = 4 << 20;
    pc.dedicated_arena_min = 4 << 20;
    pc.retain_arena_bytes = 1 << 20;
    pool = spawn_arena_pool(sys, pc, memory->mapper(), 16 << 20, nullptr, {}, false);
    auto oc = make_owner_config();
    oc.rdma_configured = true;
    oc.rdma_min_bytes = chunk;
    oc.lease_timeout = rdma_lease;
    owner_rdma_links links;
    links.pool = pool;
    links.copier = sys.spawn(counting_copier, copier_jobs);
    copier = links.copier;
    remote_owner = spawn_owner(sys, remote, oc, &remote_om, links);
    peers->put(remote, {caf::actor_cast<caf::actor>(remote_owner), true, caf::actor{}});
    reader = std::make_shared<fake_rdma_reader>(sys, pool, memory);
    use_consumers([](consumer_config&) {});
  }

  ~ActorRdma() override {
    caf::anon_send_exit(remote_owner, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(copier, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// Replaces the node's consumer service with one that reads through the
  /// fake (its config adjusted by `tweak`).
  template <class F>
  void use_consumers(F tweak) {
    caf::anon_send_exit(ctx->consumer, caf::exit_reason::user_shutdown);
    auto cc = consumer_ctx();
    cc.reader = reader;
    cc.warm = warm;
    cc.cfg.rdma_configured = true;
    cc.cfg.request_timeout = 1s;
    cc.cfg.transfer_timeout = 20s;
    tweak(cc.cfg);
    ctx->consumer = spawn_consumer_service(sys, cc);
    sched.run();
  }

  static char byte_at(size_t i) { return static_cast<char>((i * 7) % 253); }

  /// Stages `n` bytes in the remote owner's registered memory.
  data_handle stage_pinned(size_t n) {
    byte_buffer b(n);
    for (size_t i = 0; i < n; ++i)
      b[i] = byte_at(i);
    auto r = call<data_handle>(remote_owner, register_pinned_atom::value, b, uint64_t{0});
    EXPECT_TRUE(r.values) << describe(r.error);
    return std::get<0>(*r.values);
  }

  static void expect_bytes(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(data[i], byte_at(i)) << "at " << i;
  }

  std::string remote_stat() {
    return std::get<0>(*call<std::string>(remote_owner, stat_atom::value).values);
  }

  bool remote_has(const std::string& field) {
    return remote_stat().find(field) != std::string::npos;
  }

  double path(transfer_path p, path_reason r) { return paths.value(p, r); }

  /// Advances virtual time in steps (so renewals and the reaper run).
  void advance(std::chrono::milliseconds total, std::chrono::milliseconds step = 100ms) {
    for (auto t = 0ms; t < total; t += step) {
      sched.advance_time(step);
      sched.run();
    }
  }

  std::shared_ptr<fake_rdma_memory> memory = std::make_shared<fake_rdma_memory>();
  arena_pool_actor pool;
  prometheus::Registry remote_registry;
  path_metrics remote_paths;
  owner_metrics remote_om;
  owner_actor remote_owner;
  std::shared_ptr<fake_rdma_reader> reader;
  std::shared_ptr<warm_buffers> warm; // the consumers' (none unless a test sets it)
  std::shared_ptr<std::atomic<int>> copier_jobs = std::make_shared<std::atomic<int>>(0);
  caf::actor copier; // the remote owner's
};

} // namespace

TEST_F(ActorRdma, GetReadsTheOwnersRegisteredBytesAndHoldsTheLease) {
  auto h = stage_pinned(5 * chunk + 3);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto& bytes = std::get<0>(*r.values);
  ASSERT_EQ(bytes.size(), 5 * chunk + 3);
  expect_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(reader->gets(), 1u);
  EXPECT_EQ(reader->recycled(), 1u); // the destination, once copied out
  EXPECT_EQ(remote_om.chunks_served->Value(), 0);
  EXPECT_EQ(path(transfer_path::rdma, path_reason::ok), 1);
  // The finished GET's lease is held: its hold goes a quarter of the lease
  // timeout later, and ten lease timeouts on it is still there; releasing
  // it frees the slot.
  EXPECT_EQ(cm.holds_sent->Value(), 0); // deferred
  advance(rdma_lease / 4);
  EXPECT_EQ(cm.holds_sent->Value(), 1);
  advance(10 * rdma_lease);
  EXPECT_EQ(remote_om.leases_expired->Value(), 0);
  EXPECT_TRUE(remote_has("\"leases\":1")) << remote_stat();
  auto rel = call<uint64_t, bool>(ctx->consumer, release_atom::value, h,
                                  std::get<1>(*r.values));
  ASSERT_TRUE(rel.values) << describe(rel.error);
  EXPECT_TRUE(std::get<1>(*rel.values));
  EXPECT_TRUE(remote_has("\"slots\":0")) << remote_stat();
}

TEST_F(ActorRdma, ALeaseReleasedBeforeItsHoldIsDueSendsNoHold) {
  auto h = stage_pinned(2 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto rel = call<uint64_t, bool>(ctx->consumer, release_atom::value, h,
                                  std::get<1>(*r.values));
  ASSERT_TRUE(rel.values) << describe(rel.error);
  EXPECT_TRUE(std::get<1>(*rel.values));
  advance(rdma_lease);
  EXPECT_EQ(cm.holds_dropped->Value(), 1);
  EXPECT_EQ(cm.holds_sent->Value(), 0);
  EXPECT_TRUE(remote_has("\"slots\":0")) << remote_stat();
}

TEST_F(ActorRdma, AFailedGetFallsBackToChunksExactlyOnce) {
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.fail_gets = true; }));
  auto h = stage_pinned(3 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  expect_bytes(std::get<0>(*r.values).data(), 3 * chunk);
  EXPECT_EQ(reader->gets(), 1u);
  EXPECT_EQ(remote_om.chunks_served->Value(), 3);
  EXPECT_EQ(path(transfer_path::chunked, path_reason::get_failed), 1);
  EXPECT_EQ(path(transfer_path::rdma, path_reason::ok), 0);
  // The RDMA lease was detached; only the chunked one is left (its hold
  // on its way through the consumer service).
  EXPECT_TRUE(remote_has("\"leases\":1")) << remote_stat();
}

TEST_F(ActorRdma, AnAbandonedGetFallsBackAndKeepsItsDestination) {
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.abandon_gets = true; }));
  auto h = stage_pinned(2 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  expect_bytes(std::get<0>(*r.values).data(), 2 * chunk);
  EXPECT_EQ(path(transfer_path::chunked, path_reason::get_failed), 1);
  EXPECT_EQ(reader->held_destinations(), 1u); // UCX may still write it
  EXPECT_EQ(reader->recycled(), 0u);
}

TEST_F(ActorRdma, AGetThatNeverAnswersEndsAtItsTimeoutWithTheLeaseRenewed) {
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.never_answer = true; }));
  auto h = stage_pinned(2 * chunk);
  auto pending = start_call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_FALSE(pending->done());
  // Five lease timeouts pass while the GET hangs: the renewals keep the
  // lease, and the transfer timeout (20 s) ends the GET with a fallback.
  advance(20s + 100ms);
  ASSERT_TRUE(pending->done());
  ASSERT_TRUE(pending->values) << describe(pending->error);
  expect_bytes(std::get<0>(*pending->values).data(), 2 * chunk);
  EXPECT_EQ(remote_om.leases_expired->Value(), 0);
  EXPECT_EQ(path(transfer_path::chunked, path_reason::get_failed), 1);
}

TEST_F(ActorRdma, NoDestinationFallsBackToChunks) {
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.refuse_destinations = true; }));
  auto h = stage_pinned(2 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  expect_bytes(std::get<0>(*r.values).data(), 2 * chunk);
  EXPECT_EQ(reader->allocations(), 1u);
  EXPECT_EQ(reader->gets(), 0u);
  EXPECT_EQ(path(transfer_path::chunked, path_reason::pool_exhausted), 1);
}

TEST_F(ActorRdma, TheReceiversLimitIsCheckedBeforeAnyAllocation) {
  use_consumers([](consumer_config& c) { c.staged_payload_max = chunk; });
  auto h = stage_pinned(2 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  EXPECT_TRUE(is(r.error, errc::payload_too_large)) << describe(r.error);
  EXPECT_EQ(reader->allocations(), 0u);
  EXPECT_EQ(reader->gets(), 0u);
  sched.run();
  EXPECT_TRUE(remote_has("\"leases\":0")) << remote_stat(); // detached
}

TEST_F(ActorRdma, TheKillSwitchSendsNoOffer) {
  use_consumers([](consumer_config& c) { c.rdma_enabled = false; });
  auto h = stage_pinned(2 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  expect_bytes(std::get<0>(*r.values).data(), 2 * chunk);
  EXPECT_EQ(reader->gets(), 0u);
  EXPECT_EQ(path(transfer_path::chunked, path_reason::kill_switch), 1);
  EXPECT_EQ(remote_om.chunks_served->Value(), 2);
}

TEST_F(ActorRdma, GetPinnedHandsOverTheDestinationItself) {
  auto h = stage_pinned(3 * chunk);
  auto r = call<pinned_ptr, uint64_t, uint64_t>(ctx->consumer, get_pinned_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto& [block, len, lease] = *r.values;
  ASSERT_EQ(len, 3 * chunk);
  expect_bytes(block->data(), len);
  EXPECT_EQ(reader->recycled(), 0u); // the caller holds it
  EXPECT_EQ(path(transfer_path::rdma, path_reason::ok), 1);
}

TEST_F(ActorRdma, AWriterWhoseGetWasAbandonedFailsTheGet) {
  auto w = call<pinned_ptr>(ctx->consumer, pool_alloc_atom::value, uint64_t{4 * chunk});
  ASSERT_TRUE(w.values) << describe(w.error);
  auto writer = std::get<0>(*w.values);
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.abandon_gets = true; }));
  auto h = stage_pinned(2 * chunk);
  auto r = call<uint64_t, uint64_t>(ctx->consumer, get_into_atom::value, h, writer);
  // Chunks must not land in memory UCX may still write, and the caller's
  // writer is the only destination it asked for: the get fails, clearly.
  EXPECT_TRUE(is(r.error, errc::get_abandoned)) << describe(r.error);
  EXPECT_EQ(remote_om.chunks_served->Value(), 0);
  sched.run();
  EXPECT_TRUE(remote_has("\"leases\":0")) << remote_stat();
}

TEST_F(ActorRdma, AWriterReceivesTheGetInPlace) {
  auto w = call<pinned_ptr>(ctx->consumer, pool_alloc_atom::value, uint64_t{4 * chunk});
  ASSERT_TRUE(w.values) << describe(w.error);
  auto writer = std::get<0>(*w.values);
  auto h = stage_pinned(3 * chunk + 5);
  auto r = call<uint64_t, uint64_t>(ctx->consumer, get_into_atom::value, h, writer);
  ASSERT_TRUE(r.values) << describe(r.error);
  EXPECT_EQ(std::get<0>(*r.values), 3 * chunk + 5);
  expect_bytes(writer->data(), 3 * chunk + 5);
  EXPECT_EQ(reader->allocations(), 0u); // the GET went into the writer
}

TEST_F(ActorRdma, AnOwnerThatDiesMidGetFailsTheGet) {
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.never_answer = true; }));
  auto h = stage_pinned(2 * chunk);
  auto pending = start_call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_FALSE(pending->done());
  caf::anon_send_exit(remote_owner, caf::exit_reason::kill);
  sched.run();
  ASSERT_TRUE(pending->done());
  EXPECT_TRUE(is(pending->error, errc::peer_down)) << describe(pending->error);
}

TEST_F(ActorRdma, AnOwnerThatDiesMidGetIntoAWriterSaysTheWriterIsUnsafe) {
  // The GET may still write the caller's writer: the caller hears so.
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.never_answer = true; }));
  auto w = call<pinned_ptr>(ctx->consumer, pool_alloc_atom::value, uint64_t{4 * chunk});
  ASSERT_TRUE(w.values) << describe(w.error);
  auto writer = std::get<0>(*w.values);
  auto h = stage_pinned(2 * chunk);
  auto pending = start_call<uint64_t, uint64_t>(ctx->consumer, get_into_atom::value, h, writer);
  ASSERT_FALSE(pending->done());
  caf::anon_send_exit(remote_owner, caf::exit_reason::kill);
  sched.run();
  ASSERT_TRUE(pending->done());
  EXPECT_TRUE(is(pending->error, errc::get_abandoned)) << describe(pending->error);
  EXPECT_NE(describe(pending->error).find("went down"), std::string::npos)
    << describe(pending->error); // the cause
}

TEST_F(ActorRdma, APlainGetsGetLandsInItsResultBufferWithNoRegisteredDestination) {
  use_consumers([](consumer_config& c) { c.get_into_result = true; });
  // 9 MiB: the fresh result grows in three 4 MiB slices before the GET.
  auto h = stage_pinned(9 * MiB + 3);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto& bytes = std::get<0>(*r.values);
  ASSERT_EQ(bytes.size(), 9 * MiB + 3);
  expect_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(reader->gets(), 1u);
  EXPECT_EQ(reader->allocations(), 0u); // no registered destination
  EXPECT_EQ(reader->recycled(), 0u);    // and none to copy out of
  EXPECT_EQ(path(transfer_path::rdma, path_reason::ok), 1);
}

TEST_F(ActorRdma, AWarmBufferThatFitsIsTheGetsResultAsItIs) {
  warm = std::make_shared<warm_buffers>(64 * MiB);
  use_consumers([](consumer_config& c) { c.get_into_result = true; });
  warm->give(byte_buffer(6 * MiB, 'p'));
  ASSERT_EQ(warm->kept_buffers(), 1u);
  auto h = stage_pinned(5 * MiB);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  auto& bytes = std::get<0>(*r.values);
  EXPECT_EQ(warm->kept_buffers(), 0u); // the kept pages, cut to size, took the GET
  ASSERT_EQ(bytes.size(), 5 * MiB);
  expect_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(reader->allocations(), 0u);
}

TEST_F(ActorRdma, AnAbandonedGetIntoTheResultKeepsThatBufferAndFallsBackToChunks) {
  use_consumers([](consumer_config& c) { c.get_into_result = true; });
  reader->set_faults(faults_where([](fake_rdma_faults& f) { f.abandon_gets = true; }));
  auto h = stage_pinned(3 * chunk);
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, h);
  ASSERT_TRUE(r.values) << describe(r.error);
  expect_bytes(std::get<0>(*r.values).data(), 3 * chunk);
  EXPECT_EQ(path(transfer_path::chunked, path_reason::get_failed), 1);
  // The buffer UCX may still write stays with the reader; the chunks went
  // to a fresh one.
  EXPECT_EQ(reader->held_destinations(), 1u);
  EXPECT_EQ(reader->allocations(), 0u);
  EXPECT_EQ(remote_om.chunks_served->Value(), 3);
}

TEST_F(ActorRdma, TheShutdownDrainCopiesAtMostFourMiBInlineAndTheRestOnTheCopier) {
  // Ten slots of 768 KiB, each below the copier's 1 MiB: five (3.75 MiB)
  // are copied in the drain's handler, the other five on the copier.
  std::vector<data_handle> handles;
  for (int i = 0; i < 10; ++i)
    handles.push_back(stage_pinned(768 * 1024));
  auto before = copier_jobs->load();
  auto drained = call<uint64_t>(remote_owner, drain_atom::value);
  ASSERT_TRUE(drained.values) << describe(drained.error);
  EXPECT_EQ(std::get<0>(*drained.values), 10u);
  EXPECT_EQ(copier_jobs->load() - before, 5);
  // Every slot still serves its bytes, now by chunks from plain memory.
  auto r = call<byte_buffer, uint64_t>(ctx->consumer, get_atom::value, handles.back());
  ASSERT_TRUE(r.values) << describe(r.error);
  ASSERT_EQ(std::get<0>(*r.values).size(), 768u * 1024);
  expect_bytes(std::get<0>(*r.values).data(), 768 * 1024);
  EXPECT_EQ(remote_paths.value(transfer_path::chunked, path_reason::not_pinned), 1);
}
