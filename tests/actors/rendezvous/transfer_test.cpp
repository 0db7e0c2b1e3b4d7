// Transfer: the consumer's rules as a plain state machine, driven event by
// event with no actors, no network and no clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include <caf/sec.hpp>

#include "actors/rendezvous/transfer.hpp"
#include "protocol/errors.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

using T = transfer;

const data_handle handle{7, 9};

/// A framing-valid UCX 1.13 packed key: one memory domain, one key byte.
const std::vector<uint8_t> good_rkey{0x01, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0xab};

T::params params(T::into dest = T::into::buffer) {
  T::params p;
  p.handle = handle;
  p.dest = dest;
  p.rdma_registry = true;
  p.rdma_enabled = true;
  p.ucx_peer = true;
  p.pull_window = 2;
  p.lease = 40s;
  return p;
}

template <class C>
std::vector<C> all(const T::commands& cmds) {
  std::vector<C> out;
  for (auto& c : cmds)
    if (auto* x = std::get_if<C>(&c))
      out.push_back(*x);
  return out;
}

template <class C>
bool has(const T::commands& cmds) {
  return !all<C>(cmds).empty();
}

template <class C>
C one(const T::commands& cmds) {
  auto xs = all<C>(cmds);
  EXPECT_EQ(xs.size(), 1u);
  return xs.empty() ? C{} : xs.front();
}

rv_acquire_response ready(uint64_t total, uint64_t chunk = 4, uint64_t lease = 11,
                          uint64_t transfer_id = 12) {
  rv_acquire_response r;
  r.ready = rv_ready{lease, transfer_id, chunk, total == 0 ? 0 : chunks_for(total, chunk),
                     total};
  return r;
}

rdma_descriptor descriptor(uint64_t len) {
  rdma_descriptor d;
  d.generation = 3;
  d.addr = 0x10000;
  d.len = len;
  d.rkey = good_rkey;
  return d;
}

rv_acquire_response rdma(uint64_t len, uint64_t lease_timeout_ms = 1000,
                         uint64_t lease = 21) {
  rv_acquire_response r;
  r.rdma = rv_rdma_grant{lease, encode_descriptor(descriptor(len)), lease_timeout_ms, len};
  return r;
}

/// The chunk writes of one whole chunked transfer, answered in `order`
/// among the pulls outstanding at each step (index into the sorted set).
struct run_result {
  std::vector<uint64_t> offsets;
  size_t max_in_flight = 0;
  size_t delivers = 0;
  size_t pulls = 0;
};

} // namespace

TEST(Transfer, TheOfferComesFromLocalFactsAndEachMissingOneIsCounted) {
  struct row {
    bool registry, enabled, peer;
    bool offered;
    path_reason counted;
  };
  const row rows[] = {
    {true, true, true, true, path_reason::ok},
    {false, true, true, false, path_reason::not_configured},
    {true, false, true, false, path_reason::kill_switch},
    {true, true, false, false, path_reason::no_offer},
    {false, false, false, false, path_reason::not_configured},
  };
  for (auto& r : rows) {
    auto p = params();
    p.rdma_registry = r.registry;
    p.rdma_enabled = r.enabled;
    p.ucx_peer = r.peer;
    T t{p};
    auto cmds = t.start();
    auto acq = one<T::send_acquire>(cmds);
    EXPECT_EQ(acq.request.rdma.has_value(), r.offered);
    EXPECT_EQ(t.offered(), r.offered);
    EXPECT_EQ(acq.request.handle, handle);
    EXPECT_EQ(acq.request.lease_ms, 40000u); // every acquire asks for a deadline
    EXPECT_TRUE(acq.request.holds);          // and says it holds the lease when done
    auto counts = all<T::count>(cmds);
    if (r.offered) {
      EXPECT_TRUE(counts.empty());
    } else {
      ASSERT_EQ(counts.size(), 1u);
      EXPECT_EQ(counts[0].reason, r.counted);
      EXPECT_EQ(counts[0].path, transfer_path::chunked);
    }
  }
}

TEST(Transfer, ChunksArriveInEveryOrderAndLandAtTheirOffsets) {
  // 4 chunks of 4 bytes (the last 2), every order the window allows.
  constexpr uint64_t total = 14;
  for (uint32_t window : {1u, 2u, 4u, 8u}) {
    std::function<void(T&, std::set<uint64_t>, run_result)> explore;
    size_t runs = 0;
    explore = [&](T& t, std::set<uint64_t> outstanding, run_result r) {
      if (outstanding.empty()) {
        ++runs;
        EXPECT_EQ(r.delivers, 1u);
        std::sort(r.offsets.begin(), r.offsets.end());
        EXPECT_EQ(r.offsets, (std::vector<uint64_t>{0, 4, 8, 12}));
        EXPECT_LE(r.max_in_flight, window);
        EXPECT_EQ(r.pulls, 4u);
        return;
      }
      for (auto index : outstanding) {
        T copy = t;
        auto rest = outstanding;
        rest.erase(index);
        auto next = r;
        auto cmds = copy.on_chunk(index, index == 3 ? 2 : 4);
        auto w = one<T::write_chunk>(cmds);
        EXPECT_EQ(w.index, index);
        next.offsets.push_back(w.offset);
        for (auto& p : all<T::send_pull>(cmds)) {
          rest.insert(p.index);
          ++next.pulls;
        }
        next.max_in_flight = std::max(next.max_in_flight, rest.size());
        next.delivers += all<T::deliver>(cmds).size();
        EXPECT_EQ(has<T::deliver>(cmds), rest.empty());
        if (rest.empty()) { // the owner keeps its deadline until the hold
          EXPECT_EQ(one<T::send_hold>(cmds).lease_id, 11u);
          EXPECT_EQ(one<T::send_hold>(cmds).within, 10s); // a quarter of 40 s
        }
        explore(copy, rest, next);
      }
    };
    auto p = params();
    p.pull_window = window;
    T t{p};
    t.start();
    auto cmds = t.on_acquired(ready(total));
    EXPECT_EQ(one<T::reserve>(cmds).bytes, total);
    std::set<uint64_t> outstanding;
    run_result r;
    for (auto& pull : all<T::send_pull>(cmds)) {
      EXPECT_EQ(pull.transfer_id, 12u);
      outstanding.insert(pull.index);
      ++r.pulls;
    }
    EXPECT_EQ(outstanding.size(), std::min<size_t>(window, 4));
    r.max_in_flight = outstanding.size();
    explore(t, outstanding, r);
    EXPECT_GE(runs, 1u);
    if (window >= 4) {
      EXPECT_EQ(runs, 24u); // all 4! orders
    }
  }
}

TEST(Transfer, AChunkOfTheWrongSizeFailsAndDetaches) {
  for (uint64_t size : {0u, 3u, 5u}) {
    T t{params()};
    t.start();
    t.on_acquired(ready(8));
    auto cmds = t.on_chunk(0, size);
    EXPECT_EQ(one<T::send_detach>(cmds).lease_id, 11u);
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::protocol_violation));
    EXPECT_FALSE(has<T::write_chunk>(cmds));
    EXPECT_TRUE(t.finished());
    EXPECT_TRUE(t.on_chunk(1, 4).empty()); // nothing after the end
  }
}

TEST(Transfer, TheOwnersLayoutAndTheLimitsAreCheckedBeforeAnyAllocation) {
  struct row {
    const char* what;
    T::into dest;
    uint64_t room;
    uint64_t limit;
    rv_acquire_response answer;
    errc expected;
  };
  auto lying = ready(100);
  lying.ready->chunk_count = 3; // 100 bytes of 4 are 25 chunks
  auto zero_chunk = ready(100);
  zero_chunk.ready->chunk_size = 0;
  auto empty_with_chunks = ready(0);
  empty_with_chunks.ready->chunk_count = 1;
  auto huge = ready(~uint64_t{0}, 524288);
  const row rows[] = {
    {"lying count", T::into::buffer, 0, 0, lying, errc::protocol_violation},
    {"zero chunk size", T::into::buffer, 0, 0, zero_chunk, errc::protocol_violation},
    {"chunks of nothing", T::into::buffer, 0, 0, empty_with_chunks,
     errc::protocol_violation},
    {"over the limit", T::into::buffer, 0, 64, ready(65), errc::payload_too_large},
    {"2^64 over the limit", T::into::buffer, 0, 1 << 20, huge, errc::payload_too_large},
    {"past the caller's buffer", T::into::raw, 64, 0, ready(65), errc::payload_too_large},
    {"RDMA over the limit", T::into::buffer, 0, 64, rdma(65), errc::payload_too_large},
    {"RDMA past the writer", T::into::pinned_writer, 64, 0, rdma(65),
     errc::payload_too_large},
    {"pinned result over the limit", T::into::pinned_result, 0, 64, ready(65),
     errc::payload_too_large},
  };
  for (auto& r : rows) {
    SCOPED_TRACE(r.what);
    auto p = params(r.dest);
    p.room = r.room;
    p.staged_payload_max = r.limit;
    T t{p};
    t.start();
    auto cmds = t.on_acquired(r.answer);
    EXPECT_FALSE(has<T::reserve>(cmds));
    EXPECT_FALSE(has<T::alloc_destination>(cmds));
    EXPECT_FALSE(has<T::start_get>(cmds));
    EXPECT_FALSE(has<T::send_pull>(cmds));
    EXPECT_TRUE(has<T::send_detach>(cmds)); // the granted lease goes back
    EXPECT_TRUE(is(one<T::fail>(cmds).error, r.expected)) << describe(one<T::fail>(cmds).error);
  }
}

TEST(Transfer, EachFallbackReasonFallsBackOnceToChunks) {
  struct row {
    const char* what;
    std::function<T::commands(T&)> cause;
    path_reason reason;
  };
  auto bad_bytes = [](T& t) {
    auto r = rdma(64);
    r.rdma->descriptor.push_back(0); // a trailing byte
    return t.on_acquired(r);
  };
  auto len_mismatch = [](T& t) {
    auto r = rdma(64);
    r.rdma->total_len = 65;
    return t.on_acquired(r);
  };
  auto bad_key = [](T& t) {
    auto d = descriptor(64);
    d.rkey = {0x03, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01}; // framing runs past the end
    rv_acquire_response r;
    r.rdma = rv_rdma_grant{21, encode_descriptor(d), 1000, 64};
    return t.on_acquired(r);
  };
  auto refused = [](T& t) {
    auto first = t.on_acquired(rdma(64));
    EXPECT_EQ(one<T::alloc_destination>(first).bytes, 64u);
    EXPECT_TRUE(one<T::alloc_destination>(first).for_get);
    return t.on_destination(false);
  };
  auto get_failed = [](T& t) {
    t.on_acquired(rdma(64));
    auto granted = t.on_destination(true);
    EXPECT_TRUE(has<T::start_get>(granted));
    return t.on_get_failed(make_error(errc::get_failed, "refused"));
  };
  const row rows[] = {
    {"descriptor with a trailing byte", bad_bytes, path_reason::decode_error},
    {"length disagrees", len_mismatch, path_reason::decode_error},
    {"key framing", bad_key, path_reason::decode_error},
    {"no destination", refused, path_reason::pool_exhausted},
    {"GET failed", get_failed, path_reason::get_failed},
  };
  for (auto& r : rows) {
    SCOPED_TRACE(r.what);
    T t{params()};
    t.start();
    auto cmds = r.cause(t);
    auto c = one<T::count>(cmds);
    EXPECT_EQ(c.path, transfer_path::chunked);
    EXPECT_EQ(c.reason, r.reason);
    EXPECT_EQ(one<T::send_detach>(cmds).lease_id, 21u);
    // No GET runs on: it never started, or UCX ended it with an error.
    EXPECT_FALSE(one<T::send_detach>(cmds).get_unfinished);
    auto again = one<T::send_acquire>(cmds);
    EXPECT_FALSE(again.request.rdma); // the fallback offers nothing
    EXPECT_TRUE(t.fell_back());
    // A second descriptor is an error, and its lease goes back too.
    auto second = t.on_acquired(rdma(64, 1000, 22));
    EXPECT_EQ(one<T::send_detach>(second).lease_id, 22u);
    EXPECT_TRUE(is(one<T::fail>(second).error, errc::protocol_violation));
    EXPECT_FALSE(has<T::send_acquire>(second));
  }
}

TEST(Transfer, TheFallbackPullsAndFinishesByChunks) {
  T t{params()};
  t.start();
  t.on_acquired(rdma(8));
  t.on_destination(true);
  t.on_get_failed(make_error(errc::get_failed, "refused"));
  auto cmds = t.on_acquired(ready(8));
  EXPECT_EQ(all<T::send_pull>(cmds).size(), 2u);
  t.on_chunk(1, 4);
  auto end = t.on_chunk(0, 4);
  EXPECT_EQ(one<T::send_hold>(end).lease_id, 11u); // the chunked lease's
  auto d = one<T::deliver>(end);
  EXPECT_FALSE(d.by_rdma);
  EXPECT_EQ(d.total_len, 8u);
  EXPECT_EQ(d.lease_id, 11u);
}

TEST(Transfer, RenewalsEveryHalfLeaseWithAFloorAndNoneForZero) {
  struct row {
    uint64_t lease_timeout_ms;
    std::chrono::milliseconds period; // 0: no ticker
  };
  const row rows[] = {{1000, 500ms}, {30000, 15000ms}, {9, 5ms}, {1, 5ms}, {0, 0ms}};
  for (auto& r : rows) {
    SCOPED_TRACE(r.lease_timeout_ms);
    T t{params()};
    t.start();
    EXPECT_FALSE(has<T::schedule_renewal>(t.on_acquired(rdma(64, r.lease_timeout_ms))));
    auto get = t.on_destination(true);
    EXPECT_TRUE(has<T::start_get>(get));
    if (r.period.count() == 0) {
      EXPECT_FALSE(has<T::schedule_renewal>(get));
      EXPECT_TRUE(t.on_renew_tick().empty());
    } else {
      EXPECT_EQ(one<T::schedule_renewal>(get).period, r.period);
      auto tick = t.on_renew_tick();
      EXPECT_EQ(one<T::send_renew>(tick).lease_id, 21u);
      EXPECT_EQ(one<T::schedule_renewal>(tick).period, r.period);
    }
    auto done = t.on_get_done();
    auto c = one<T::count>(done);
    EXPECT_EQ(c.path, transfer_path::rdma);
    EXPECT_EQ(c.reason, path_reason::ok);
    EXPECT_EQ(one<T::send_hold>(done).lease_id, 21u);
    EXPECT_EQ(one<T::send_hold>(done).within, r.period / 2); // inside the deadline
    ASSERT_EQ(done.size(), 3u); // the hold goes out right after the answer
    EXPECT_TRUE(std::holds_alternative<T::deliver>(done[1]));
    EXPECT_TRUE(std::holds_alternative<T::send_hold>(done[2]));
    EXPECT_TRUE(one<T::deliver>(done).by_rdma);
    EXPECT_TRUE(t.on_renew_tick().empty()); // renewals stop with the transfer
  }
}

TEST(Transfer, AnAbandonedGetIntoACallersWriterFailsInsteadOfReusingIt) {
  // An abandoned GET and one that timed out may both still be written.
  for (caf::error why : {make_error(errc::get_abandoned, "abandoned"),
                         caf::make_error(caf::sec::request_timeout)})
  for (auto dest : {T::into::pinned_writer, T::into::buffer, T::into::raw}) {
    auto p = params(dest);
    p.room = 64;
    T t{p};
    t.start();
    auto first = t.on_acquired(rdma(64));
    if (dest == T::into::pinned_writer) { // straight into the writer
      EXPECT_FALSE(has<T::alloc_destination>(first));
      EXPECT_TRUE(has<T::start_get>(first));
    } else {
      t.on_destination(true);
    }
    auto cmds = t.on_get_failed(why);
    if (dest == T::into::pinned_writer) {
      EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::get_abandoned));
      EXPECT_EQ(one<T::send_detach>(cmds).lease_id, 21u);
      EXPECT_FALSE(has<T::send_acquire>(cmds));
    } else { // the chunks go elsewhere than the block UCX may write
      EXPECT_EQ(one<T::count>(cmds).reason, path_reason::get_failed);
      EXPECT_TRUE(has<T::send_acquire>(cmds));
    }
  }
}

TEST(Transfer, AnyEndWhileAGetRunsIntoACallersWriterSaysTheWriterIsUnsafe) {
  // UCX may still write the writer, whatever ended the get: the caller is
  // told (get_abandoned, with the cause), where a GET into ferry's own
  // block ends with the cause alone (the reader keeps that block).
  struct row {
    const char* name;
    std::function<T::commands(T&)> end;
    errc cause;
    bool detaches;
  };
  const std::vector<row> rows = {
    {"deadline", [](T& t) { return t.on_deadline(); }, errc::timeout, true},
    {"owner down", [](T& t) { return t.on_owner_down("killed"); }, errc::peer_down, false},
    {"caller gone", [](T& t) { return t.on_caller_gone(); }, errc::timeout, true},
    {"a request failed",
     [](T& t) { return t.on_error(make_error(errc::protocol_violation, "x")); },
     errc::protocol_violation, true},
  };
  for (const auto& r : rows)
    for (auto dest : {T::into::pinned_writer, T::into::buffer}) {
      SCOPED_TRACE(r.name);
      auto p = params(dest);
      p.room = 64;
      T t{p};
      t.start();
      t.on_acquired(rdma(64));
      if (dest != T::into::pinned_writer)
        t.on_destination(true);
      auto cmds = r.end(t);
      const auto& err = one<T::fail>(cmds).error;
      if (dest == T::into::pinned_writer) {
        EXPECT_TRUE(is(err, errc::get_abandoned)) << describe(err);
        EXPECT_NE(describe(err).find("may still write"), std::string::npos);
      } else {
        EXPECT_TRUE(is(err, r.cause)) << describe(err);
      }
      EXPECT_EQ(has<T::send_detach>(cmds), r.detaches);
      if (r.detaches) // the GET was running: the owner keeps its block
        EXPECT_TRUE(one<T::send_detach>(cmds).get_unfinished);
      EXPECT_TRUE(t.finished());
    }
  // Before a GET, or after one that failed and left no write behind (the
  // chunks then go into the writer), the cause stands alone.
  auto p = params(T::into::pinned_writer);
  p.room = 64;
  T pulling{p};
  pulling.start();
  pulling.on_acquired(ready(64));
  EXPECT_TRUE(is(one<T::fail>(pulling.on_deadline()).error, errc::timeout));
  T fell_back{p};
  fell_back.start();
  fell_back.on_acquired(rdma(64));
  ASSERT_TRUE(has<T::send_acquire>(fell_back.on_get_failed(make_error(errc::get_failed, "x"))));
  fell_back.on_acquired(ready(64));
  auto err = one<T::fail>(fell_back.on_deadline()).error;
  EXPECT_TRUE(is(err, errc::timeout)) << describe(err);
  // Once the GET is done and the get delivered, the deadline has nothing to end.
  T got{p};
  got.start();
  got.on_acquired(rdma(64));
  got.on_get_done();
  EXPECT_TRUE(got.on_deadline().empty());
}

TEST(Transfer, OwnerDownFailsWithoutDetachingCallerGoneDetaches) {
  {
    T t{params()};
    t.start();
    t.on_acquired(ready(8));
    auto cmds = t.on_owner_down("killed");
    EXPECT_FALSE(has<T::send_detach>(cmds)); // nobody to give it back to
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::peer_down));
  }
  {
    T t{params()};
    t.start();
    t.on_acquired(ready(8));
    auto cmds = t.on_caller_gone();
    EXPECT_EQ(one<T::send_detach>(cmds).lease_id, 11u);
    EXPECT_TRUE(has<T::fail>(cmds));
    EXPECT_TRUE(t.on_caller_gone().empty()); // once
  }
  {
    T t{params()};
    t.start(); // no lease yet: nothing to detach
    auto cmds = t.on_error(make_error(errc::timeout));
    EXPECT_FALSE(has<T::send_detach>(cmds));
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::timeout));
  }
}

TEST(Transfer, AnAcquireAnsweredAfterTheCallerWentHandsItsLeaseBack) {
  {
    T t{params()};
    t.start(); // the acquire is out
    EXPECT_FALSE(has<T::send_detach>(t.on_caller_gone())); // no lease yet
    auto late = t.on_acquired(ready(8));
    EXPECT_EQ(one<T::send_detach>(late).lease_id, 11u);
    EXPECT_FALSE(has<T::send_pull>(late));
    EXPECT_FALSE(has<T::deliver>(late));
    EXPECT_TRUE(t.on_acquired(ready(8)).empty()); // once
  }
  {
    auto p = params();
    p.single_use = true; // a fetch: the lease and its reference go back
    T t{p};
    t.start();
    t.on_deadline();
    EXPECT_EQ(one<T::send_release>(t.on_acquired(ready(8))).lease_id, 11u);
  }
  {
    T t{params()};
    t.start();
    t.on_caller_gone();
    rv_acquire_response empty;
    EXPECT_TRUE(t.on_acquired(empty).empty()); // nothing granted, nothing to return
  }
}

TEST(Transfer, AnEmptyPayloadIsDeliveredWithoutAPull) {
  T t{params()};
  t.start();
  auto cmds = t.on_acquired(ready(0));
  EXPECT_FALSE(has<T::send_pull>(cmds));
  EXPECT_EQ(one<T::deliver>(cmds).total_len, 0u);
  EXPECT_EQ(one<T::send_hold>(cmds).lease_id, 11u); // its lease still has a deadline
}

TEST(Transfer, GetPinnedPullsIntoARegisteredBlock) {
  {
    T t{params(T::into::pinned_result)};
    t.start();
    auto cmds = t.on_acquired(ready(8));
    auto a = one<T::alloc_destination>(cmds);
    EXPECT_EQ(a.bytes, 8u);
    EXPECT_FALSE(a.for_get);
    EXPECT_FALSE(has<T::send_pull>(cmds)); // not before the block is there
    EXPECT_EQ(all<T::send_pull>(t.on_destination(true)).size(), 2u);
  }
  {
    T t{params(T::into::pinned_result)};
    t.start();
    t.on_acquired(ready(8));
    auto cmds = t.on_destination(false);
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::pool_exhausted));
    EXPECT_TRUE(has<T::send_detach>(cmds));
  }
  {
    auto p = params(T::into::pinned_result);
    p.rdma_registry = false;
    T t{p};
    t.start();
    auto cmds = t.on_acquired(ready(8));
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::pool_exhausted));
    EXPECT_FALSE(has<T::alloc_destination>(cmds));
  }
}

TEST(Transfer, AnswersThatComeLateOrTwiceChangeNothing) {
  T t{params()};
  t.start();
  t.on_acquired(ready(4));
  auto end = t.on_chunk(0, 4);
  EXPECT_TRUE(has<T::deliver>(end));
  EXPECT_TRUE(t.on_acquired(ready(4)).empty());
  EXPECT_TRUE(t.on_get_done().empty());
  EXPECT_TRUE(t.on_destination(true).empty());
  EXPECT_TRUE(t.on_error(make_error(errc::timeout)).empty());
  EXPECT_TRUE(t.on_owner_down("late").empty());
}

TEST(Transfer, AChunkThatWasNeverPulledIsAProtocolViolation) {
  T t{params()};
  t.start();
  t.on_acquired(ready(16)); // pulls 0 and 1 (window 2)
  auto cmds = t.on_chunk(3, 4);
  EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::protocol_violation));
}

TEST(Transfer, ASingleUseGetReleasesWhenItDeliversAndWhenItIsRefused) {
  auto p = params();
  p.single_use = true;
  p.rdma_registry = false; // chunked
  {
    T t{p};
    t.start();
    t.on_acquired(ready(4));
    auto cmds = t.on_chunk(0, 4);
    ASSERT_TRUE(has<T::deliver>(cmds));
    EXPECT_EQ(one<T::send_release>(cmds).lease_id, 11u);
    EXPECT_FALSE(has<T::send_hold>(cmds));
    EXPECT_FALSE(has<T::send_detach>(cmds));
  }
  {
    p.staged_payload_max = 64;
    T t{p};
    t.start();
    auto cmds = t.on_acquired(ready(65));
    EXPECT_EQ(one<T::send_release>(cmds).lease_id, 11u); // the owner frees its copy
    EXPECT_FALSE(has<T::send_detach>(cmds));
    EXPECT_FALSE(has<T::reserve>(cmds));
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::payload_too_large));
  }
  {
    p.staged_payload_max = 0;
    T t{p};
    t.start();
    t.on_acquired(ready(8));
    auto cmds = t.on_caller_gone(); // the fetch gave up
    EXPECT_EQ(one<T::send_release>(cmds).lease_id, 11u);
  }
}

TEST(Transfer, ASingleUseGetByRdmaReleasesInsteadOfHolding) {
  auto p = params();
  p.single_use = true;
  T t{p};
  t.start();
  t.on_acquired(rdma(64));
  t.on_destination(true);
  auto cmds = t.on_get_done();
  ASSERT_TRUE(has<T::deliver>(cmds));
  EXPECT_EQ(one<T::send_release>(cmds).lease_id, 21u);
  EXPECT_FALSE(has<T::send_hold>(cmds));
}

namespace {

rv_acquire_response eager_ready(uint64_t total, uint64_t chunk = 4096) {
  auto r = ready(total, chunk);
  r.ready->eager = true;
  return r;
}

T::params eager_params(T::into dest = T::into::buffer, uint64_t eager_max = 4096) {
  auto p = params(dest);
  p.eager_max = eager_max;
  p.room = 8192;
  return p;
}

} // namespace

TEST(Transfer, EveryAcquireButGetPinnedsAsksForTheEagerAnswer) {
  for (auto dest : {T::into::buffer, T::into::raw, T::into::pinned_writer,
                    T::into::pinned_result}) {
    T t{eager_params(dest)};
    auto acq = one<T::send_acquire>(t.start());
    EXPECT_EQ(acq.request.eager_max, dest == T::into::pinned_result ? 0u : 4096u);
  }
  T off{eager_params(T::into::buffer, 0)};
  EXPECT_EQ(one<T::send_acquire>(off.start()).request.eager_max, 0u);
}

TEST(Transfer, AnEagerAnswerIsDeliveredWithoutAPullAndItsLeaseHeld) {
  for (auto dest : {T::into::buffer, T::into::raw, T::into::pinned_writer}) {
    T t{eager_params(dest)};
    t.start();
    auto cmds = t.on_acquired(eager_ready(3000), 3000);
    EXPECT_FALSE(has<T::send_pull>(cmds));
    EXPECT_FALSE(has<T::alloc_destination>(cmds));
    auto w = one<T::write_chunk>(cmds);
    EXPECT_EQ(w.index, 0u);
    EXPECT_EQ(w.offset, 0u);
    EXPECT_TRUE(w.eager);
    EXPECT_EQ(has<T::reserve>(cmds), dest == T::into::buffer);
    auto d = one<T::deliver>(cmds);
    EXPECT_EQ(d.total_len, 3000u);
    EXPECT_EQ(d.lease_id, 11u);
    // The owner keeps its deadline until told: an answer lost on the way
    // leaves no lease behind for good.
    EXPECT_EQ(one<T::send_hold>(cmds).lease_id, 11u);
    EXPECT_TRUE(t.eager());
    EXPECT_TRUE(t.finished());
  }
  T empty{eager_params()};
  empty.start();
  auto cmds = empty.on_acquired(eager_ready(0), 0);
  EXPECT_EQ(one<T::deliver>(cmds).total_len, 0u);
  EXPECT_FALSE(has<T::write_chunk>(cmds));
}

TEST(Transfer, AnEagerAcquireAnsweredPlainlyPullsAsBefore) {
  T t{eager_params()};
  t.start();
  // A larger payload, or an owner with no eager answer: no bytes, chunks.
  auto cmds = t.on_acquired(ready(10000, 4096), 0);
  EXPECT_EQ(all<T::send_pull>(cmds).size(), 2u);
  EXPECT_FALSE(has<T::deliver>(cmds));
  EXPECT_FALSE(t.eager());
  T old_owner{eager_params()};
  old_owner.start();
  EXPECT_EQ(all<T::send_pull>(old_owner.on_acquired(ready(100, 4096))).size(), 1u);
}

TEST(Transfer, AnEagerAnswerThatBreaksTheRulesIsAViolationAndDetaches) {
  struct row {
    const char* what;
    uint64_t asked;
    rv_acquire_response answer;
    std::optional<uint64_t> bytes;
    T::into dest = T::into::buffer;
  };
  auto two_chunks = eager_ready(3000, 2048);
  const row rows[] = {
    {"larger than asked", 2048, eager_ready(3000), 3000},
    {"eager when none was asked", 0, eager_ready(100), 100},
    {"eager to get_pinned", 4096, eager_ready(100), 100, T::into::pinned_result},
    {"more than one chunk", 4096, two_chunks, 3000},
    {"fewer bytes than its length", 4096, eager_ready(3000), 2999},
    {"more bytes than its length", 4096, eager_ready(3000), 3001},
    {"bytes for an empty payload", 4096, eager_ready(0), 1},
    {"eager without bytes (the plain acquire)", 4096, eager_ready(100), std::nullopt},
    {"bytes with a plain answer", 4096, ready(100, 4096), 100},
    {"bytes with an RDMA answer", 4096, rdma(100), 100},
  };
  for (auto& r : rows) {
    SCOPED_TRACE(r.what);
    T t{eager_params(r.dest, r.asked)};
    t.start();
    auto cmds = t.on_acquired(r.answer, r.bytes);
    EXPECT_FALSE(has<T::deliver>(cmds));
    EXPECT_FALSE(has<T::write_chunk>(cmds));
    EXPECT_FALSE(has<T::send_pull>(cmds));
    EXPECT_FALSE(has<T::alloc_destination>(cmds));
    EXPECT_TRUE(has<T::send_detach>(cmds)); // the granted lease goes back
    EXPECT_TRUE(is(one<T::fail>(cmds).error, errc::protocol_violation))
      << describe(one<T::fail>(cmds).error);
    EXPECT_TRUE(t.finished());
  }
}

TEST(Transfer, AnEagerSingleUseGetReleasesWhenItDelivers) {
  auto p = eager_params();
  p.single_use = true;
  T t{p};
  t.start();
  auto cmds = t.on_acquired(eager_ready(100), 100);
  EXPECT_EQ(one<T::deliver>(cmds).total_len, 100u);
  EXPECT_EQ(one<T::send_release>(cmds).lease_id, 11u);
}

TEST(Transfer, AGetFailureThatLeavesNoWriteBehindRetriesAWritersGetByChunks) {
  for (caf::error why : {make_error(errc::get_failed, "refused"),
                         make_error(errc::peer_down, "endpoint closed")}) {
    auto p = params(T::into::pinned_writer);
    p.room = 64;
    T t{p};
    t.start();
    t.on_acquired(rdma(64));
    auto cmds = t.on_get_failed(why);
    EXPECT_FALSE(has<T::fail>(cmds));
    EXPECT_EQ(one<T::count>(cmds).reason, path_reason::get_failed);
    EXPECT_TRUE(has<T::send_acquire>(cmds));
  }
}

TEST(Transfer, ARepeatedOrUnpulledChunkIsAProtocolViolation) {
  struct row {
    const char* what;
    std::vector<uint64_t> answers; // chunk indices, in arrival order
    const char* says;              // nullptr: delivered
  };
  // 3 chunks of 4 bytes, window 2: pulls 0 and 1, then 2 after the first.
  const row rows[] = {
    {"each once", {1, 0, 2}, nullptr},
    {"the same one twice in the window", {0, 0}, "chunk 0 came twice"},
    {"a finished one again", {1, 2, 1}, "chunk 1 came twice"},
    {"one never pulled", {2}, "chunk 2 was not pulled"},
    {"past the end", {7}, "chunk 7 was not pulled"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.what);
    T t{params()};
    t.start();
    auto first = t.on_acquired(ready(12));
    EXPECT_EQ(all<T::send_pull>(first).size(), 2u);
    T::commands last;
    for (auto i : r.answers) {
      last = t.on_chunk(i, 4);
      if (has<T::fail>(last))
        break;
    }
    if (!r.says) {
      EXPECT_EQ(one<T::deliver>(last).total_len, 12u);
      continue;
    }
    auto err = one<T::fail>(last).error;
    EXPECT_TRUE(is(err, errc::protocol_violation));
    EXPECT_NE(describe(err).find(r.says), std::string::npos) << describe(err);
    EXPECT_EQ(one<T::send_detach>(last).lease_id, 11u); // its lease goes back
    EXPECT_FALSE(has<T::write_chunk>(last));
    EXPECT_TRUE(t.finished());
  }
  // The eager chunk counts as pulled and answered: it cannot come again.
  auto p = params();
  p.eager_max = 100;
  T t{p};
  t.start();
  auto r = ready(40, 64);
  r.ready->eager = true;
  auto cmds = t.on_acquired(r, 40);
  EXPECT_TRUE(has<T::deliver>(cmds));
  EXPECT_TRUE(t.on_chunk(0, 40).empty()); // done: nothing more happens
}

TEST(Transfer, TheLeaseAskedForIsAtLeastTwoRequestTimeouts) {
  struct row {
    std::chrono::milliseconds lease, request_timeout;
    uint64_t asked_ms;
  };
  const row rows[] = {
    {40s, 10s, 40000}, {30s, 20s, 40000}, {1s, 0s, 1000}, {0s, 5s, 10000}, {0s, 0s, 0},
  };
  for (const auto& r : rows) {
    auto p = params();
    p.lease = r.lease;
    p.request_timeout = r.request_timeout;
    T t{p};
    EXPECT_EQ(one<T::send_acquire>(t.start()).request.lease_ms, r.asked_ms);
    // The fallback's acquire asks for the same.
    t.on_acquired(rdma(64));
    auto again = t.on_destination(false);
    EXPECT_EQ(one<T::send_acquire>(again).request.lease_ms, r.asked_ms);
  }
}

TEST(Transfer, TheDeadlineEndsTheGetInEveryPhaseAndDetachesItsLease) {
  struct row {
    const char* what;
    std::function<void(T&)> to_phase;
    bool holds_lease;
    const char* names; // where the error says the get stood
  };
  const row rows[] = {
    {"acquiring", [](T&) {}, false, "(its acquire unanswered)"},
    {"allocating", [](T& t) { t.on_acquired(rdma(64)); }, true,
     "(waiting for a registered destination of 64 bytes)"},
    {"getting", [](T& t) { t.on_acquired(rdma(64)); t.on_destination(true); }, true,
     "(its UCX GET of 64 bytes running)"},
    {"pulling", [](T& t) { t.on_acquired(ready(12)); }, true, "(pulling: 0 of 3 chunks arrived, 2 pulls out)"},
    {"pulling after the fallback",
     [](T& t) {
       t.on_acquired(rdma(64));
       t.on_destination(false);
       t.on_acquired(ready(12));
     },
     true, "(pulling: 0 of 3 chunks arrived, 2 pulls out, after falling back from RDMA to chunks)"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.what);
    auto p = params();
    p.deadline = 310s;
    T t{p};
    auto first = t.start();
    EXPECT_EQ(one<T::schedule_deadline>(first).after, 310s);
    r.to_phase(t);
    auto cmds = t.on_deadline();
    auto err = one<T::fail>(cmds).error;
    EXPECT_TRUE(is(err, errc::timeout));
    EXPECT_NE(describe(err).find("did not finish within 310000 ms " + std::string{r.names}),
              std::string::npos)
      << describe(err);
    EXPECT_EQ(has<T::send_detach>(cmds), r.holds_lease);
    EXPECT_TRUE(t.finished());
    // Late answers change nothing.
    EXPECT_TRUE(t.on_get_done().empty());
    EXPECT_TRUE(t.on_chunk(0, 4).empty());
    EXPECT_TRUE(t.on_deadline().empty());
  }
  // No deadline: none armed.
  T t{params()};
  EXPECT_FALSE(has<T::schedule_deadline>(t.start()));
  // A delivered get ignores its deadline.
  auto p = params();
  p.deadline = 1s;
  T done{p};
  done.start();
  EXPECT_TRUE(has<T::deliver>(done.on_acquired(ready(0))));
  EXPECT_TRUE(done.on_deadline().empty());
}

TEST(Transfer, APlainGetsGetLandsInItsResultWhereTheTransportsAllowIt) {
  struct row {
    T::into dest;
    bool get_into_result;
    bool into_result;
  };
  const row rows[] = {
    {T::into::buffer, true, true},
    {T::into::buffer, false, false},
    {T::into::raw, true, false},           // a caller's memory: copied out
    {T::into::pinned_result, true, false}, // the caller gets a pool block
  };
  for (const auto& r : rows) {
    auto p = params(r.dest);
    p.room = 64;
    p.get_into_result = r.get_into_result;
    T t{p};
    t.start();
    auto a = one<T::alloc_destination>(t.on_acquired(rdma(64)));
    EXPECT_TRUE(a.for_get);
    EXPECT_EQ(a.bytes, 64u);
    EXPECT_EQ(a.into_result, r.into_result) << static_cast<int>(r.dest);
  }
}

TEST(Transfer, AFinishedGetsHoldIsDeferredOnlyWhenItMayBeAndItsBoundAllows) {
  struct row {
    bool defer_holds;
    uint64_t lease_timeout_ms; // the hold is due within a quarter of it
    bool deferred;
  };
  const row rows[] = {
    {true, 30000, true},  // 7.5 s
    {true, 4000, true},   // 1 s: exactly the margin
    {true, 3999, false},  // just under it: at once
    {false, 30000, false}, // no service to defer through
    {true, 0, false},     // no renewals: due at once
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.lease_timeout_ms);
    auto p = params();
    p.defer_holds = r.defer_holds;
    T t{p};
    t.start();
    t.on_acquired(rdma(64, r.lease_timeout_ms));
    t.on_destination(true);
    auto hold = one<T::send_hold>(t.on_get_done());
    EXPECT_EQ(hold.deferred, r.deferred);
    EXPECT_EQ(hold.within >= T::min_hold_deferral, r.lease_timeout_ms >= 4000);
  }
}

TEST(Transfer, AChunkedGetHoldsItsLeaseWithinAQuarterOfItAndOnlyIfItHasADeadline) {
  struct row {
    bool defer_holds;
    std::chrono::milliseconds lease, request_timeout;
    std::optional<std::chrono::milliseconds> within; // none: no hold
    bool deferred;
  };
  const row rows[] = {
    {true, 40s, 1s, 10s, true},
    {true, 1s, 3s, 1500ms, true},   // the lease is at least two request timeouts
    {true, 2s, 0ms, 500ms, false},  // too close to defer
    {false, 40s, 1s, 10s, false},   // no service to defer through
    {true, 0ms, 0ms, std::nullopt, false}, // no deadline asked: nothing to hold
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.lease.count());
    auto p = params();
    p.rdma_registry = false;
    p.defer_holds = r.defer_holds;
    p.lease = r.lease;
    p.request_timeout = r.request_timeout;
    T t{p};
    t.start();
    t.on_acquired(ready(4));
    auto cmds = t.on_chunk(0, 4);
    ASSERT_TRUE(has<T::deliver>(cmds));
    if (!r.within) {
      EXPECT_FALSE(has<T::send_hold>(cmds));
      continue;
    }
    auto hold = one<T::send_hold>(cmds);
    EXPECT_EQ(hold.within, *r.within);
    EXPECT_EQ(hold.deferred, r.deferred);
  }
}

TEST(Transfer, ADetachSaysWhetherTheLeasesGetMayStillRun) {
  // A GET given up (the engine's get_abandoned, or its request timing out)
  // may still be served by the owner's worker: the fallback's detach says so.
  for (auto err : {make_error(errc::get_abandoned, "past its deadline"),
                   caf::error{caf::sec::request_timeout}}) {
    SCOPED_TRACE(describe(err));
    T t{params()};
    t.start();
    t.on_acquired(rdma(64));
    ASSERT_TRUE(has<T::start_get>(t.on_destination(true)));
    auto cmds = t.on_get_failed(err);
    EXPECT_TRUE(one<T::send_detach>(cmds).get_unfinished);
    EXPECT_TRUE(has<T::send_acquire>(cmds)); // and it falls back
  }
  // A failure before the GET, or after it was done, has none running.
  T pulling{params()};
  pulling.start();
  pulling.on_acquired(ready(64));
  EXPECT_FALSE(one<T::send_detach>(pulling.on_deadline()).get_unfinished);
  T allocating{params()};
  allocating.start();
  allocating.on_acquired(rdma(64));
  EXPECT_FALSE(one<T::send_detach>(allocating.on_caller_gone()).get_unfinished);
  // A single-use get's release says the same.
  auto single = params();
  single.single_use = true;
  T released{single};
  released.start();
  released.on_acquired(rdma(64));
  released.on_destination(true);
  EXPECT_TRUE(one<T::send_release>(released.on_deadline()).get_unfinished);
  T delivered{single};
  delivered.start();
  delivered.on_acquired(rdma(64));
  delivered.on_destination(true);
  auto done = delivered.on_get_done();
  ASSERT_TRUE(has<T::send_release>(done));
  EXPECT_FALSE(one<T::send_release>(done).get_unfinished);
}
