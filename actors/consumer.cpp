#include "actors/consumer.hpp"

#include <cstring>
#include <new>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <prometheus/counter.h>

#include "actors/consumer_metrics.hpp"
#include "actors/path_metrics.hpp"
#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"

namespace ferry {

namespace {

struct consumer_state {
  consumer_context ctx;
  data_handle handle;
  owner_actor owner;
  caf::response_promise rp;
  bool into = false;         // get_into: write to dest, else to buffer
  mutable_bytes dest;
  byte_buffer buffer;
  rv_ready ready;
  bool have_lease = false;
  bool done = false;
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
  self->quit();
}

void finish(consumer_ptr self) {
  auto& st = self->state;
  st.done = true;
  if (auto* m = st.ctx.metrics) {
    m->gets_ok->Increment();
    m->bytes_pulled->Increment(static_cast<double>(st.ready.total_len));
  }
  if (st.into)
    st.rp.deliver(st.ready.total_len, st.ready.lease_id);
  else
    st.rp.deliver(std::move(st.buffer), st.ready.lease_id);
  self->quit();
}

char* destination(consumer_ptr self) {
  auto& st = self->state;
  return st.into ? st.dest.data : st.buffer.data();
}

void pump(consumer_ptr self);

void on_chunk(consumer_ptr self, uint64_t index, byte_buffer& chunk) {
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
      .then([=](byte_buffer& chunk) { on_chunk(self, index, chunk); },
            [=](caf::error& err) { fail(self, std::move(err)); });
  }
}

/// Checks the owner's answer before anything of its size is allocated.
caf::error check_ready(consumer_ptr self, const rv_ready& r) {
  auto& st = self->state;
  if (r.total_len > 0
      && (r.chunk_size == 0
          || r.chunk_count != (r.total_len + r.chunk_size - 1) / r.chunk_size))
    return make_error(errc::protocol_violation,
                      "owner announced " + std::to_string(r.chunk_count)
                        + " chunks of " + std::to_string(r.chunk_size)
                        + " bytes for " + std::to_string(r.total_len)
                        + " bytes");
  if (r.total_len == 0 && r.chunk_count != 0)
    return make_error(errc::protocol_violation,
                      "owner announced chunks for an empty payload");
  auto limit = st.ctx.cfg.staged_payload_max;
  if (limit > 0 && r.total_len > limit)
    return make_error(errc::payload_too_large,
                      "payload of " + std::to_string(r.total_len)
                        + " bytes exceeds staged_payload_max of "
                        + std::to_string(limit) + " bytes");
  if (st.into && r.total_len > st.dest.size)
    return make_error(errc::payload_too_large,
                      "payload of " + std::to_string(r.total_len)
                        + " bytes does not fit a buffer of "
                        + std::to_string(st.dest.size) + " bytes");
  return caf::none;
}

void on_acquired(consumer_ptr self, const std::string& body) {
  auto& st = self->state;
  auto resp = decode<rv_acquire_response>(body);
  if (!resp)
    return fail(self, resp.error());
  if (!resp->ready)
    return fail(self, make_error(errc::protocol_violation,
                                 "owner answered RDMA to an acquire "
                                 "without an offer"));
  st.ready = *resp->ready;
  st.have_lease = true;
  if (auto err = check_ready(self, st.ready))
    return fail(self, std::move(err));
  if (!st.into) {
    try {
      st.buffer.resize(st.ready.total_len);
    } catch (const std::bad_alloc&) {
      return fail(self, make_error(errc::payload_too_large,
                                   "cannot allocate "
                                     + std::to_string(st.ready.total_len)
                                     + " bytes"));
    }
  }
  if (st.ready.chunk_count == 0)
    return finish(self);
  pump(self);
}

rv_acquire_request make_acquire(consumer_ptr self) {
  auto& st = self->state;
  rv_acquire_request req;
  req.handle = st.handle;
  if (auto* m = st.ctx.metrics) {
    // The offer comes from local facts only; without a registry there is none.
    if (!st.ctx.cfg.rdma_configured)
      m->paths->count(transfer_path::chunked, path_reason::not_configured);
    else if (!st.ctx.cfg.rdma_enabled)
      m->paths->count(transfer_path::chunked, path_reason::kill_switch);
  }
  return req;
}

void on_owner(consumer_ptr self, caf::actor owner) {
  auto& st = self->state;
  if (st.done)
    return;
  st.owner = caf::actor_cast<owner_actor>(owner);
  self->monitor(owner);
  self
    ->request(st.owner, st.ctx.cfg.request_timeout, rv_acquire_atom::value,
              encode(make_acquire(self)))
    .then([=](std::string& body) { on_acquired(self, body); },
          [=](caf::error& err) { fail(self, std::move(err)); });
}

void start(consumer_ptr self, const data_handle& h) {
  auto& st = self->state;
  st.handle = h;
  self->set_down_handler([=](caf::down_msg& dm) {
    if (dm.source == self->state.owner.address())
      fail(self, make_error(errc::peer_down,
                            "owner of " + to_string(self->state.handle)
                              + " went down: " + to_string(dm.reason)));
  });
  self
    ->request(st.ctx.directory, st.ctx.cfg.request_timeout, lookup_atom::value,
              h.owner())
    .then([=](caf::actor& owner) { on_owner(self, std::move(owner)); },
          [=](caf::error& err) { fail(self, std::move(err)); });
}

caf::behavior consumer(consumer_ptr self, consumer_context ctx) {
  self->state.ctx = std::move(ctx);
  return {
    [=](get_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      start(self, h);
      return self->state.rp;
    },
    [=](get_into_atom, const data_handle& h, mutable_bytes dest) {
      self->state.rp = self->make_response_promise();
      self->state.into = true;
      self->state.dest = dest;
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
