#include "actors/consumer.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <prometheus/counter.h>

#include "actors/consumer_metrics.hpp"
#include "actors/owner_lookup.hpp"
#include "actors/path_metrics.hpp"
#include "actors/rdma_metrics.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/errors.hpp"
#include "protocol/rdma_descriptor.hpp"
#include "protocol/rv_messages.hpp"
#include "rdma/rkey_preparse.hpp"

#include <prometheus/histogram.h>
#include <spdlog/spdlog.h>

namespace ferry {

namespace {

struct consumer_state {
  consumer_context ctx;
  uint64_t get_seq = 0; // which get of this actor; stale ticks carry an older one
  data_handle handle;
  owner_actor owner;
  caf::actor_addr caller; // who asked for this get (monitored)
  caf::response_promise rp;
  // Where the bytes go: a fresh buffer (get), a caller's memory (get_into),
  // a pool block returned as it is (get_pinned), or a caller's registered
  // block, GET straight into it (get_into with a pinned writer).
  enum class mode { buffer, raw, pinned_result, pinned_writer } into = mode::buffer;
  mutable_bytes dest;
  pinned_ptr block;
  byte_buffer buffer;
  rv_ready ready;
  bool have_lease = false;
  bool done = false;
  bool ucx_peer = false;       // the owner is registered on our UCX engine
  bool offered = false;        // the current acquire carried an offer
  bool fell_back = false;      // the one fallback happened
  bool renewing = false;       // the transfer runs: renewals go out
  std::chrono::milliseconds renew_period{0};
  uint64_t next_index = 0;
  uint64_t in_flight = 0;
  uint64_t received = 0;
  static inline const char* name = "ferry.consumer";
};

using consumer_ptr = caf::stateful_actor<consumer_state>*;

void fail(consumer_ptr self, caf::error err) {
  auto& st = self->state;
  if (st.done)
    return;
  st.done = true;
  if (st.ctx.metrics)
    st.ctx.metrics->gets_failed->Increment();
  // Best effort: give the lease back so the owner does not hold it. A dead
  // owner has nothing to give back to.
  if (st.have_lease && !is(err, errc::peer_down))
    caf::anon_send(st.owner, rv_detach_atom::value,
                   encode(rv_detach_request{st.handle, st.ready.lease_id}));
  st.rp.deliver(std::move(err));
  self->quit(); // replies may still be on their way: never reused
}

void count_path(consumer_ptr self, transfer_path path, path_reason reason) {
  if (auto* m = self->state.ctx.metrics)
    m->paths->count(path, reason);
}

/// After a clean finish nothing of this get is in flight (every pull, the
/// acquire and the GET have answered), so the actor can serve another get:
/// it goes back to the service with its state reset. Its remote proxy on
/// the owner's node then stays, where a fresh actor per get costs the owner
/// node a proxy and both nodes an announce and a kill message per get.
void recycle(consumer_ptr self) {
  auto& st = self->state;
  if (!st.ctx.recycle_to)
    return self->quit();
  if (st.owner)
    self->demonitor(st.owner.address());
  if (st.caller)
    self->demonitor(st.caller);
  // CAF 0.17 keeps an answered request's timeout armed until it fires (a
  // terminating actor drops them all). A reused consumer drops them here,
  // or every get would leave its acquire's, GET's and pulls' timers behind.
  self->home_system().clock().cancel_timeouts(self);
  consumer_state fresh;
  fresh.ctx = std::move(st.ctx);
  fresh.get_seq = st.get_seq;
  st = std::move(fresh);
  self->send(st.ctx.recycle_to, consumer_idle_atom::value,
             caf::actor_cast<caf::actor>(self));
}

void finish(consumer_ptr self) {
  auto& st = self->state;
  st.done = true;
  st.renewing = false;
  // The transfer is done: the caller holds the lease from now on, with no
  // deadline, on either path (sent before the caller can release it).
  caf::anon_send(st.owner, rv_lease_renew_atom::value,
                 encode(rv_lease_renew_request{st.handle, st.ready.lease_id, true}));
  if (auto* m = st.ctx.metrics) {
    m->gets_ok->Increment();
    m->bytes_pulled->Increment(static_cast<double>(st.ready.total_len));
  }
  switch (st.into) {
    case consumer_state::mode::buffer:
      st.rp.deliver(std::move(st.buffer), st.ready.lease_id);
      break;
    case consumer_state::mode::pinned_result:
      st.rp.deliver(std::move(st.block), st.ready.total_len, st.ready.lease_id);
      break;
    default:
      st.rp.deliver(st.ready.total_len, st.ready.lease_id);
  }
  recycle(self);
}

/// Where chunks land in caller-provided or pooled memory (a plain get's
/// own buffer grows with place_at instead).
char* destination(consumer_ptr self) {
  auto& st = self->state;
  switch (st.into) {
    case consumer_state::mode::raw:
      return st.dest.data;
    default:
      return st.block->data();
  }
}

void pump(consumer_ptr self);

void on_chunk(consumer_ptr self, uint64_t index, const chunk_bytes& chunk) {
  auto& st = self->state;
  if (st.done)
    return;
  auto offset = index * st.ready.chunk_size;
  auto expected = std::min(st.ready.chunk_size, st.ready.total_len - offset);
  if (chunk.size() != expected)
    return fail(self, make_error(errc::protocol_violation,
                                 "chunk " + std::to_string(index) + " has "
                                   + std::to_string(chunk.size())
                                   + " bytes, expected "
                                   + std::to_string(expected)));
  if (st.into == consumer_state::mode::buffer)
    place_at(st.buffer, offset, chunk.data(), chunk.size());
  else
    std::memcpy(destination(self) + offset, chunk.data(), chunk.size());
  if (st.ctx.metrics)
    st.ctx.metrics->chunks_pulled->Increment();
  --st.in_flight;
  if (++st.received == st.ready.chunk_count)
    return finish(self);
  pump(self);
}

void pump(consumer_ptr self) {
  auto& st = self->state;
  while (!st.done && st.in_flight < st.ctx.cfg.pull_window
         && st.next_index < st.ready.chunk_count) {
    auto index = st.next_index++;
    ++st.in_flight;
    self
      ->request(st.owner, st.ctx.cfg.request_timeout, rv_pull_atom::value,
                encode(rv_pull_request{st.ready.transfer_id, index}))
      .then([=](const chunk_bytes& chunk) { on_chunk(self, index, chunk); },
            [=](caf::error& err) { fail(self, std::move(err)); });
  }
}

/// Checks a stated payload size before anything of its size is allocated.
caf::error check_size(consumer_ptr self, uint64_t total_len) {
  auto& st = self->state;
  auto limit = st.ctx.cfg.staged_payload_max;
  if (limit > 0 && total_len > limit)
    return make_error(errc::payload_too_large,
                      "payload of " + std::to_string(total_len)
                        + " bytes exceeds staged_payload_max of "
                        + std::to_string(limit) + " bytes");
  uint64_t room = total_len;
  if (st.into == consumer_state::mode::raw)
    room = st.dest.size;
  else if (st.into == consumer_state::mode::pinned_writer)
    room = st.block ? st.block->size() : 0;
  if (total_len > room)
    return make_error(errc::payload_too_large,
                      "payload of " + std::to_string(total_len)
                        + " bytes does not fit a buffer of "
                        + std::to_string(room) + " bytes");
  return caf::none;
}

/// Checks the owner's chunked answer before anything is allocated.
caf::error check_ready(consumer_ptr self, const rv_ready& r) {
  if (r.total_len > 0
      && (r.chunk_size == 0
          || r.chunk_count != chunks_for(r.total_len, r.chunk_size)))
    return make_error(errc::protocol_violation,
                      "owner announced " + std::to_string(r.chunk_count)
                        + " chunks of " + std::to_string(r.chunk_size)
                        + " bytes for " + std::to_string(r.total_len)
                        + " bytes");
  if (r.total_len == 0 && r.chunk_count != 0)
    return make_error(errc::protocol_violation,
                      "owner announced chunks for an empty payload");
  return check_size(self, r.total_len);
}


void acquire(consumer_ptr self, bool allow_offer);

/// The one fallback: detach the RDMA lease, acquire with no offer, pull chunks.
void fall_back(consumer_ptr self, path_reason reason) {
  auto& st = self->state;
  if (st.done)
    return;
  count_path(self, transfer_path::chunked, reason);
  st.renewing = false;
  if (st.have_lease)
    caf::anon_send(st.owner, rv_detach_atom::value,
                   encode(rv_detach_request{st.handle, st.ready.lease_id}));
  st.have_lease = false;
  st.fell_back = true;
  acquire(self, false);
}

/// Renews the lease every half `lease` (5 ms floor) until the transfer
/// ends; a zero `lease` means the owner set no deadline: nothing to renew.
void start_renewals(consumer_ptr self, std::chrono::milliseconds lease) {
  auto& st = self->state;
  if (lease.count() <= 0)
    return;
  st.renew_period = std::max(std::chrono::milliseconds{5}, lease / 2);
  st.renewing = true;
  self->delayed_send(self, st.renew_period, tick_atom::value, st.get_seq);
}

void renew_tick(consumer_ptr self) {
  auto& st = self->state;
  if (st.done || !st.renewing)
    return;
  // A lost renewal is harmless: the next one is half a deadline away.
  caf::anon_send(st.owner, rv_lease_renew_atom::value,
                 encode(rv_lease_renew_request{st.handle, st.ready.lease_id}));
  self->delayed_send(self, st.renew_period, tick_atom::value, st.get_seq);
}

/// GETs the descriptor's range into `block` on the UCX engine, renewing the
/// lease while it runs; the engine holds the block until UCX is done with it.
void run_get(consumer_ptr self, const rv_rdma_grant& grant,
             const rdma_descriptor& desc, pinned_ptr block) {
  auto& st = self->state;
  if (st.done)
    return;
  start_renewals(self, std::chrono::milliseconds{grant.lease_timeout_ms});
  self
    ->request(st.ctx.engine.actor(), st.ctx.cfg.transfer_timeout,
              ucx_get_atom::value, st.handle.owner(), desc.generation, desc.addr,
              desc.len, desc.rkey, block)
    .then(
      [=](uint64_t nanos) {
        auto& st = self->state;
        st.renewing = false;
        if (st.done)
          return;
        if (auto* r = st.ctx.rdma)
          r->get_duration->Observe(static_cast<double>(nanos) * 1e-9);
        spdlog::debug("rdma get of {}: {} bytes in {} us", to_string(st.handle),
                      desc.len, nanos / 1000);
        count_path(self, transfer_path::rdma, path_reason::ok);
        // get and get_into copy out, so the pool space returns at once.
        // A large copied-out destination stays warm for the next GET
        // (rdma/warm_destination.hpp).
        switch (st.into) {
          case consumer_state::mode::buffer:
            assign_for_bulk(st.buffer, block->data(), desc.len);
            if (auto* warm = st.ctx.engine.warm())
              warm->keep(block);
            break;
          case consumer_state::mode::raw:
            std::memcpy(st.dest.data, block->data(), desc.len);
            if (auto* warm = st.ctx.engine.warm())
              warm->keep(block);
            break;
          case consumer_state::mode::pinned_result:
            st.block = block;
            break;
          case consumer_state::mode::pinned_writer:
            break; // already in the caller's block
        }
        finish(self);
      },
      [=](caf::error& err) {
        // A GET given up while UCX may still write its destination: a
        // caller's writer is not reused for the chunks (a pool block or a
        // fresh buffer is, as UCX writes only the block it was lent).
        if (self->state.into == consumer_state::mode::pinned_writer
            && (is(err, errc::get_abandoned) || err == caf::sec::request_timeout))
          return fail(self, make_error(errc::get_abandoned,
                                       "the GET into the caller's registered "
                                       "writer did not finish and UCX may still "
                                       "write it; it is not reused: "
                                         + describe(err)));
        fall_back(self, path_reason::get_failed);
      });
  st.ctx.engine.wake();
}

void on_rdma(consumer_ptr self, const rv_rdma_grant& grant) {
  auto& st = self->state;
  st.ready = rv_ready{grant.lease_id, 0, 0, 0, grant.total_len};
  st.have_lease = true;
  auto d = decode_descriptor(grant.descriptor.data(), grant.descriptor.size());
  if (!d || d.descriptor->backend != 1
      || check_packed_rkey(d.descriptor->rkey.data(), d.descriptor->rkey.size())
           != rkey_check::ok)
    return fall_back(self, path_reason::decode_error);
  auto desc = *d.descriptor;
  if (desc.len != grant.total_len)
    return fall_back(self, path_reason::decode_error);
  if (auto err = check_size(self, desc.len))
    return fail(self, std::move(err));
  if (st.into == consumer_state::mode::pinned_writer)
    return run_get(self, grant, desc, st.block); // zero copy
  if (st.into != consumer_state::mode::pinned_result)
    if (auto* warm = st.ctx.engine.warm())
      if (auto block = warm->take(desc.len)) // pages already faulted in
        return run_get(self, grant, desc, std::move(block));
  self
    ->request(st.ctx.pool, st.ctx.cfg.request_timeout, pool_alloc_atom::value,
              desc.len, true)
    .then([=](pinned_ptr& block) { run_get(self, grant, desc, std::move(block)); },
          [=](caf::error&) { fall_back(self, path_reason::pool_exhausted); });
}

void on_acquired(consumer_ptr self, const std::string& body) {
  auto& st = self->state;
  if (st.done)
    return;
  auto resp = decode<rv_acquire_response>(body);
  if (!resp)
    return fail(self, resp.error());
  if (resp->rdma) {
    if (!st.offered) // e.g. a second descriptor after the fallback
      return fail(self, make_error(errc::protocol_violation,
                                   "owner answered RDMA to an acquire "
                                   "without an offer"));
    return on_rdma(self, *resp->rdma);
  }
  if (!resp->ready)
    return fail(self, make_error(errc::protocol_violation, "empty acquire answer"));
  st.ready = *resp->ready;
  st.have_lease = true;
  if (auto err = check_ready(self, st.ready))
    return fail(self, std::move(err));
  if (st.into == consumer_state::mode::buffer) {
    try {
      // Room only: in-order chunks are appended (place_at), not zeroed first.
      reserve_for_bulk(st.buffer, st.ready.total_len);
    } catch (const std::exception&) { // bad_alloc, length_error
      return fail(self, make_error(errc::payload_too_large,
                                   "cannot allocate "
                                     + std::to_string(st.ready.total_len)
                                     + " bytes"));
    }
  } else if (st.into == consumer_state::mode::pinned_result) {
    // Same return type on both paths: the chunks land in a pool block.
    if (!st.ctx.pool)
      return fail(self, make_error(errc::pool_exhausted,
                                   "get_pinned needs registered memory (UCX)"));
    self
      ->request(st.ctx.pool, st.ctx.cfg.request_timeout, pool_alloc_atom::value,
                std::max<uint64_t>(1, st.ready.total_len), true)
      .then(
        [=](pinned_ptr& block) {
          self->state.block = std::move(block);
          if (self->state.ready.chunk_count == 0)
            return finish(self);
          pump(self);
        },
        [=](caf::error& err) { fail(self, std::move(err)); });
    return;
  }
  if (st.ready.chunk_count == 0)
    return finish(self);
  pump(self);
}

/// The offer from the three local facts: a registry, the kill switch off,
/// the owner registered on UCX. A fallback acquire offers nothing.
rv_acquire_request make_acquire(consumer_ptr self, bool allow_offer) {
  auto& st = self->state;
  rv_acquire_request req;
  req.handle = st.handle;
  // The lease ends if this transfer goes silent; the finished transfer's
  // lease is held with no deadline. Each pull renews a chunked lease, and
  // a pull answers or fails the get within request_timeout, so a deadline
  // of twice that never ends a live transfer (an RDMA lease has its own).
  req.lease_ms = static_cast<uint64_t>(
    std::max(st.ctx.cfg.transfer_lease, 2 * st.ctx.cfg.request_timeout).count());
  st.offered = false;
  if (!allow_offer)
    return req;
  const auto& cfg = st.ctx.cfg;
  if (!cfg.rdma_configured || !st.ctx.engine)
    count_path(self, transfer_path::chunked, path_reason::not_configured);
  else if (!cfg.rdma_enabled)
    count_path(self, transfer_path::chunked, path_reason::kill_switch);
  else if (!st.ucx_peer)
    count_path(self, transfer_path::chunked, path_reason::no_offer);
  else {
    req.rdma = rdma_offer{{"ucx"}};
    st.offered = true;
  }
  return req;
}

void acquire(consumer_ptr self, bool allow_offer) {
  auto& st = self->state;
  self
    ->request(st.owner, st.ctx.cfg.request_timeout, rv_acquire_atom::value,
              encode(make_acquire(self, allow_offer)))
    .then([=](std::string& body) { on_acquired(self, body); },
          [=](caf::error& err) { fail(self, std::move(err)); });
}

void on_owner(consumer_ptr self, caf::actor owner, bool ucx_peer) {
  auto& st = self->state;
  if (st.done)
    return;
  st.owner = caf::actor_cast<owner_actor>(owner);
  st.ucx_peer = ucx_peer;
  self->monitor(owner);
  acquire(self, true);
}

void start(consumer_ptr self, const data_handle& h) {
  auto& st = self->state;
  ++st.get_seq;
  st.handle = h;
  // A caller that gives up (its own timeout, or it ended) gets nothing: the
  // transfer stops and its lease goes back instead of being held for nobody.
  if (const auto& sender = st.rp.source()) { // the promise took the sender
    st.caller = sender->address();
    self->monitor(sender);
  }
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.owner.address())
      fail(self, make_error(errc::peer_down,
                            "owner of " + to_string(st.handle)
                              + " went down: " + to_string(dm.reason)));
    else if (st.caller && dm.source == st.caller)
      fail(self, make_error(errc::timeout, "the caller of the get of "
                                             + to_string(st.handle)
                                             + " went away"));
  });
  find_owner(
    self, st.ctx, h.owner(),
    [=](caf::actor owner, bool ucx_peer) { on_owner(self, std::move(owner), ucx_peer); },
    [=](caf::error& err) { fail(self, std::move(err)); });
}

caf::behavior consumer(consumer_ptr self, consumer_context ctx) {
  self->state.ctx = std::move(ctx);
  if (auto* m = self->state.ctx.metrics)
    m->consumers_started->Increment();
  return {
    [=](tick_atom, uint64_t seq) {
      if (seq == self->state.get_seq)
        renew_tick(self);
    },
    [=](get_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      start(self, h);
      return self->state.rp;
    },
    [=](get_into_atom, const data_handle& h, mutable_bytes dest) {
      self->state.rp = self->make_response_promise();
      self->state.into = consumer_state::mode::raw;
      self->state.dest = dest;
      start(self, h);
      return self->state.rp;
    },
    [=](get_into_atom, const data_handle& h, pinned_ptr& writer) {
      self->state.rp = self->make_response_promise();
      self->state.into = consumer_state::mode::pinned_writer;
      self->state.block = std::move(writer);
      start(self, h);
      return self->state.rp;
    },
    [=](get_pinned_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      self->state.into = consumer_state::mode::pinned_result;
      start(self, h);
      return self->state.rp;
    },
  };
}

} // namespace

caf::actor spawn_consumer(caf::actor_system& sys, const consumer_context& ctx) {
  return sys.spawn(consumer, ctx);
}

} // namespace ferry
