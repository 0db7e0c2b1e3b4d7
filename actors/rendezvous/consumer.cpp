#include "actors/rendezvous/consumer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <spdlog/spdlog.h>

#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rendezvous/bulk_copier.hpp"
#include "actors/rendezvous/consumer_metrics.hpp"
#include "actors/rendezvous/owner_lookup.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "actors/rendezvous/transfer.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"

namespace ferry {

namespace {

/// The get's deadline: a request to itself, answered when the get ends,
/// that times out at the deadline (so a finished get leaves no timer).
using get_deadline_atom = caf::atom_constant<caf::atom("get_dline")>;

struct consumer_state {
  consumer_context ctx;
  uint64_t get_seq = 0; // which get of this actor; stale ticks carry an older one
  std::optional<transfer> rules; // the get's state machine
  data_handle handle;
  owner_actor owner;
  owner_route route; // how calls reach it: CAF requests or the control channel
  caf::actor_addr caller; // who asked for this get (monitored)
  caf::response_promise rp;
  // Where the bytes go (see transfer::into): a fresh buffer, a caller's
  // memory, a pool block returned as it is, or a caller's registered block.
  transfer::into into = transfer::into::buffer;
  bool single_use = false; // fetch: the bytes only, the handle released
  bool probing = false;    // probe: the reply also names the path taken
  std::optional<transfer::count> last_path; // the last path decision
  mutable_bytes dest;
  pinned_ptr block; // the result block, the caller's writer, or a GET's destination
  // A plain get's GET landing in its result buffer (get_into_result): the
  // buffer, shared with `block` (a plain view over it) and, should the GET
  // be abandoned, with the UCX engine until UCX lets go of it.
  std::shared_ptr<byte_buffer> direct;
  uint64_t growing = 0; // `direct` is grown to this, a slice per message
  byte_buffer buffer;
  const chunk_bytes* chunk = nullptr; // the chunk being handled
  std::optional<sliced_copy> copying;  // a GET's copy-out, a slice per message
  std::optional<transfer::send_hold> hold_later; // handed to the service
  caf::response_promise deadline; // answered as the get ends
  bool done = false;
  static inline const char* name = "ferry.consumer";
};

using consumer_ptr = caf::stateful_actor<consumer_state>*;

void apply(consumer_ptr self, transfer::commands cmds);

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
  auto hold = st.hold_later;
  auto handle = st.handle;
  auto owner = caf::actor_cast<caf::actor>(st.owner);
  consumer_state fresh;
  fresh.ctx = std::move(st.ctx);
  fresh.get_seq = st.get_seq;
  st = std::move(fresh);
  auto me = caf::actor_cast<caf::actor>(self);
  if (hold) // the service sends it when due, unless the caller ends the lease
    self->send(st.ctx.recycle_to, consumer_idle_atom::value, me, handle,
               hold->lease_id, owner, static_cast<uint64_t>(hold->within.count()));
  else
    self->send(st.ctx.recycle_to, consumer_idle_atom::value, me);
}

/// The get ended: its deadline request is answered (no timeout left).
void end_deadline(consumer_ptr self) {
  auto& st = self->state;
  if (st.deadline.pending())
    st.deadline.deliver(caf::ok_atom::value);
}

void deliver(consumer_ptr self, const transfer::deliver& d) {
  auto& st = self->state;
  st.done = true;
  end_deadline(self);
  if (auto* m = st.ctx.metrics) {
    if (st.rules && st.rules->eager())
      m->eager_gets->Increment();
    m->gets_ok->Increment();
    m->bytes_pulled->Increment(static_cast<double>(d.total_len));
  }
  switch (st.into) {
    case transfer::into::buffer:
      if (st.probing)
        st.rp.deliver(std::move(st.buffer), d.lease_id,
                      std::string{st.last_path ? to_string(st.last_path->path) : "none"},
                      std::string{st.last_path ? to_string(st.last_path->reason) : "none"});
      else if (st.single_use)
        st.rp.deliver(std::move(st.buffer));
      else
        st.rp.deliver(std::move(st.buffer), d.lease_id);
      break;
    case transfer::into::pinned_result:
      st.rp.deliver(std::move(st.block), d.total_len, d.lease_id);
      break;
    default:
      st.rp.deliver(d.total_len, d.lease_id);
  }
  // recycle() follows once apply() ran the commands after this one (the hold).
}

void fail(consumer_ptr self, caf::error err) {
  auto& st = self->state;
  st.done = true;
  end_deadline(self);
  if (st.ctx.metrics)
    st.ctx.metrics->gets_failed->Increment();
  st.rp.deliver(std::move(err));
  self->quit(); // replies may still be on their way: never reused
}

/// The memory chunks are written to (a plain get's buffer grows instead).
char* chunk_destination(consumer_ptr self) {
  auto& st = self->state;
  return st.into == transfer::into::raw ? st.dest.data : st.block->data();
}

void write_chunk(consumer_ptr self, const transfer::write_chunk& w) {
  auto& st = self->state;
  const auto& c = *st.chunk;
  if (st.into == transfer::into::buffer)
    place_at(st.buffer, w.offset, c.data(), c.size());
  else
    std::memcpy(chunk_destination(self) + w.offset, c.data(), c.size());
  if (st.ctx.metrics && !w.eager)
    st.ctx.metrics->chunks_pulled->Increment();
}

/// An empty buffer for a `len`-byte result: a warm one when the node keeps
/// one that fits (no fresh pages to fault in), else a fresh one.
byte_buffer result_room(consumer_ptr self, uint64_t len) {
  auto& warm = self->state.ctx.warm;
  return warm ? warm->take(len) : byte_buffer{};
}

/// The copied-out destination returns to the pool, or stays warm (a large
/// one) for the next GET.
void release_destination(consumer_ptr self, pinned_ptr block) {
  self->state.block.reset();
  self->state.ctx.reader->recycle(std::move(block));
}

/// The copy-out is done: the bytes are the caller's, the destination goes.
void copied_out(consumer_ptr self, const std::shared_ptr<byte_buffer>& out) {
  auto& st = self->state;
  if (out)
    st.buffer = std::move(*out);
  release_destination(self, st.block);
  apply(self, st.rules->on_get_done());
}

/// The next slice of a copy-out (finish_get).
void copy_slice(consumer_ptr self) {
  auto& st = self->state;
  if (!st.copying->step())
    return self->send(self, copy_slice_atom::value, st.get_seq);
  auto out = st.copying->job().out;
  st.copying.reset();
  copied_out(self, out);
}

/// The GET's bytes, from its destination to where the caller wants them
/// (get and get_into copy out, so the pool space returns at once), then
/// the get is done. A mid-size copy runs here a slice per message (other
/// actors of this thread run between slices), a larger one on the bulk
/// copier (copy_then): never a whole payload in one handler.
void finish_get(consumer_ptr self, uint64_t len) {
  auto& st = self->state;
  if (st.direct) { // the bytes landed in the result: nothing to copy
    st.block.reset();
    st.buffer = std::move(*st.direct);
    st.buffer.resize(len); // never longer than the GET: a cut, no fill
    st.direct.reset();
    return apply(self, st.rules->on_get_done());
  }
  if (st.into != transfer::into::buffer && st.into != transfer::into::raw)
    return apply(self, st.rules->on_get_done()); // the block is the result, or the writer
  auto block = st.block;
  char* into = st.into == transfer::into::raw ? st.dest.data : nullptr;
  auto out = into ? nullptr : std::make_shared<byte_buffer>(result_room(self, len));
  copy_job job{into, block->data(), len, block, out};
  // A caller's memory is written here only, whatever the size: a get that
  // fails stops its slices with it, where a copier could go on writing
  // after the caller was told and let go of its buffer.
  if (len >= bulk_copy_min && (into || len <= sliced_copy_max)) {
    st.copying.emplace(std::move(job));
    return copy_slice(self); // the first slice at once (up to 4 MiB: all of it)
  }
  auto seq = st.get_seq;
  copy_then(
    self, st.ctx.copier, std::move(job), st.ctx.cfg.transfer_timeout,
    [=] {
      auto& st = self->state;
      if (st.get_seq == seq && !st.done)
        copied_out(self, out);
    },
    [=](caf::error& err) {
      auto& st = self->state;
      if (st.get_seq == seq && !st.done)
        apply(self, st.rules->on_error(std::move(err)));
    });
}


void run_get(consumer_ptr self, const rdma_descriptor& desc) {
  auto& st = self->state;
  auto seq = st.get_seq;
  st.ctx.reader->get(
    self, st.handle.owner(), desc, st.block, st.ctx.cfg.transfer_timeout,
    [=](caf::expected<uint64_t> nanos) {
      auto& st = self->state;
      if (st.get_seq != seq || st.done)
        return;
      if (nanos) {
        if (auto* r = st.ctx.rdma)
          r->get_duration->Observe(static_cast<double>(*nanos) * 1e-9);
        spdlog::debug("rdma get of {}: {} bytes in {} us", to_string(st.handle),
                      desc.len, *nanos / 1000);
        return finish_get(self, desc.len);
      }
      // The reader keeps a destination UCX may still write; ours is
      // dropped (a plain get's chunks go to a fresh buffer).
      if (st.into != transfer::into::pinned_writer)
        st.block.reset();
      st.direct.reset();
      apply(self, st.rules->on_get_failed(nanos.error()));
    });
}

/// A plain get's result buffer as a GET destination: a block over its
/// bytes (no registration: get_into_result says none is needed) that keeps
/// the buffer alive for as long as anyone, the UCX engine included, holds it.
pinned_ptr result_as_destination(const std::shared_ptr<byte_buffer>& room) {
  return std::make_shared<pinned_block>(room->data(), room->size(), 0,
                                        std::make_shared<const std::vector<uint8_t>>(),
                                        0, [room] {});
}

/// The machine's memory in bytes (0: unknown): no buffer can be larger.
uint64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

/// Room for `bytes` in `buf` (its contents kept); false, with the get
/// failed (payload_too_large), when that much memory cannot be had: the
/// size is the owner's word.
bool reserve_room(consumer_ptr self, byte_buffer& buf, uint64_t bytes) {
  static const uint64_t memory = physical_memory_bytes();
  if (memory > 0 && bytes > memory) {
    apply(self, self->state.rules->on_error(make_error(
                  errc::payload_too_large,
                  "a payload of " + std::to_string(bytes)
                    + " bytes is larger than this machine's memory ("
                    + std::to_string(memory) + " bytes)")));
    return false;
  }
  try {
    if (buf.capacity() < bytes)
      reserve_for_bulk(buf, bytes);
    return true;
  } catch (const std::exception&) { // bad_alloc, length_error
    apply(self, self->state.rules->on_error(make_error(
                  errc::payload_too_large,
                  "cannot allocate " + std::to_string(bytes) + " bytes")));
    return false;
  }
}

/// The result buffer grows to the GET's length a slice per message (a
/// std::vector cannot be sized without its zero fill, so the fill is never
/// a whole payload in one handler); then it is the GET's destination.
void grow_room(consumer_ptr self) {
  auto& st = self->state;
  auto& room = *st.direct;
  room.resize(std::min<uint64_t>(st.growing, room.size() + copy_slice_bytes));
  if (room.size() < st.growing) // within its capacity: no reallocation
    return self->send(self, copy_slice_atom::value, st.get_seq);
  st.growing = 0;
  st.block = result_as_destination(st.direct);
  apply(self, st.rules->on_destination(true));
}

/// A registered block for the GET (or for get_pinned's chunks), or the
/// plain get's own result buffer (into_result): a warm one cut to size
/// where one fits (never filled), else a fresh one grown by grow_room.
void alloc_destination(consumer_ptr self, const transfer::alloc_destination& a) {
  auto& st = self->state;
  if (!st.ctx.reader)
    return apply(self, st.rules->on_destination(false));
  if (a.into_result) {
    auto room = st.ctx.warm ? st.ctx.warm->take_unfilled(a.bytes) : byte_buffer{};
    if (!reserve_room(self, room, a.bytes))
      return;
    st.direct = std::make_shared<byte_buffer>(std::move(room));
    st.growing = a.bytes;
    return grow_room(self);
  }
  auto seq = st.get_seq;
  // get_pinned hands its block to the caller: never the shared warm one.
  bool warm_ok = a.for_get && st.into != transfer::into::pinned_result;
  st.ctx.reader->allocate(
    self, a.bytes, warm_ok, st.ctx.cfg.request_timeout,
    [=](caf::expected<pinned_ptr> block) {
      auto& st = self->state;
      if (st.get_seq != seq || st.done)
        return;
      if (block)
        st.block = std::move(*block);
      apply(self, st.rules->on_destination(static_cast<bool>(block)));
    });
}

void send_pull(consumer_ptr self, const transfer::send_pull& p) {
  auto& st = self->state;
  auto seq = st.get_seq;
  call_owner_pull(
    self, st.route, st.ctx.cfg.request_timeout,
    encode(rv_pull_request{p.transfer_id, p.index}),
    [=](const chunk_bytes& chunk) {
      auto& st = self->state;
      if (st.get_seq != seq || st.done)
        return;
      st.chunk = &chunk;
      apply(self, st.rules->on_chunk(p.index, chunk.size()));
      self->state.chunk = nullptr;
    },
    [=](caf::error& err) {
      auto& st = self->state;
      if (st.get_seq == seq && !st.done)
        apply(self, st.rules->on_error(std::move(err)));
    });
}

/// The acquire's answer (with the bytes of an eager one) as an event.
void on_acquire_answer(consumer_ptr self, uint64_t seq, const std::string& body,
                       const chunk_bytes* eager) {
  auto& st = self->state;
  if (st.get_seq != seq || st.done)
    return;
  auto answer = decode<rv_acquire_response>(body);
  if (!answer)
    return apply(self, st.rules->on_error(std::move(answer.error())));
  if (!eager)
    return apply(self, st.rules->on_acquired(*answer));
  st.chunk = eager; // write_chunk reads it
  apply(self, st.rules->on_acquired(*answer, eager->size()));
  self->state.chunk = nullptr;
}

void send_acquire(consumer_ptr self, rv_acquire_request req) {
  auto& st = self->state;
  auto seq = st.get_seq;
  bool eager = req.eager_max > 0;
  call_owner_acquire(
    self, st.route, st.ctx.cfg.request_timeout, encode(req), eager,
    [=](std::string& body, const chunk_bytes* bytes) {
      on_acquire_answer(self, seq, body, bytes);
    },
    [=](caf::error& err) mutable {
      auto& st = self->state;
      if (st.get_seq != seq || st.done)
        return;
      // An owner of an older ferry has no eager acquire (nothing happened
      // there): the plain one, once.
      if (eager && err == caf::sec::unexpected_message && !st.route.over_channel()) {
        req.eager_max = 0;
        return send_acquire(self, req);
      }
      apply(self, st.rules->on_error(std::move(err)));
    });
}

/// One-way control messages to the owner (a lost one is harmless: a
/// renewal is repeated, a detach or hold left undone ends with the lease's
/// deadline or its node).
template <class Atom, class Body>
void tell(consumer_ptr self, Atom atom, const Body& body) {
  tell_owner(self->state.route, atom, encode(body));
}

/// This get ends by `after` from now (see get_deadline_atom).
void arm_deadline(consumer_ptr self, std::chrono::milliseconds after) {
  auto seq = self->state.get_seq;
  self->request(caf::actor_cast<caf::actor>(self), after, get_deadline_atom::value, seq)
    .then([](caf::ok_atom) {},
          [=](caf::error& err) {
            auto& st = self->state;
            if (err == caf::sec::request_timeout && st.get_seq == seq && !st.done
                && st.rules)
              apply(self, st.rules->on_deadline());
          });
}

void apply(consumer_ptr self, transfer::commands cmds) {
  bool delivered = false;
  for (auto& cmd : cmds) {
    auto& st = self->state;
    // After the answer only the hold or the release still goes out
    // (transfer::finish).
    if (st.done
        && !(delivered && (std::holds_alternative<transfer::send_hold>(cmd)
                           || std::holds_alternative<transfer::send_release>(cmd))))
      break;
    std::visit(
      [&](auto& c) {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, transfer::send_acquire>) {
          send_acquire(self, c.request);
        } else if constexpr (std::is_same_v<T, transfer::send_pull>) {
          send_pull(self, c);
        } else if constexpr (std::is_same_v<T, transfer::alloc_destination>) {
          alloc_destination(self, c);
        } else if constexpr (std::is_same_v<T, transfer::start_get>) {
          run_get(self, c.descriptor);
        } else if constexpr (std::is_same_v<T, transfer::schedule_renewal>) {
          self->delayed_send(self, c.period, tick_atom::value, st.get_seq);
        } else if constexpr (std::is_same_v<T, transfer::schedule_deadline>) {
          arm_deadline(self, c.after);
        } else if constexpr (std::is_same_v<T, transfer::send_renew>) {
          tell(self, rv_lease_renew_atom::value,
               rv_lease_renew_request{st.handle, c.lease_id});
        } else if constexpr (std::is_same_v<T, transfer::send_detach>) {
          tell(self, rv_detach_atom::value,
               rv_detach_request{st.handle, c.lease_id});
        } else if constexpr (std::is_same_v<T, transfer::send_release>) {
          tell(self, rv_release_atom::value,
               rv_release_request{st.handle, c.lease_id});
        } else if constexpr (std::is_same_v<T, transfer::send_hold>) {
          // Deferred through the consumer service (most callers end the
          // lease sooner: no message at all).
          if (c.deferred) {
            st.hold_later = c;
          } else {
            tell(self, rv_lease_renew_atom::value,
                 rv_lease_renew_request{st.handle, c.lease_id, true});
            if (auto* m = st.ctx.metrics)
              m->holds_sent->Increment();
          }
        } else if constexpr (std::is_same_v<T, transfer::reserve>) {
          // Room only: in-order chunks are appended (place_at), not zeroed.
          st.buffer = result_room(self, c.bytes);
          reserve_room(self, st.buffer, c.bytes);
        } else if constexpr (std::is_same_v<T, transfer::write_chunk>) {
          write_chunk(self, c);
        } else if constexpr (std::is_same_v<T, transfer::count>) {
          st.last_path = c;
          if (auto* m = st.ctx.metrics)
            m->paths->count(c.path, c.reason);
        } else if constexpr (std::is_same_v<T, transfer::deliver>) {
          deliver(self, c);
          delivered = true;
        } else {
          static_assert(std::is_same_v<T, transfer::fail>);
          fail(self, std::move(c.error));
        }
      },
      cmd);
  }
  if (delivered)
    recycle(self);
}

void on_owner(consumer_ptr self, owner_route route, bool ucx_peer) {
  auto& st = self->state;
  if (st.done)
    return;
  st.owner = route.owner;
  st.route = std::move(route);
  self->monitor(st.owner);
  transfer::params p;
  p.handle = st.handle;
  p.dest = st.into;
  p.room = st.into == transfer::into::raw            ? st.dest.size
           : st.into == transfer::into::pinned_writer ? (st.block ? st.block->size() : 0)
                                                      : 0;
  const auto& cfg = st.ctx.cfg;
  p.rdma_registry = cfg.rdma_configured && st.ctx.reader;
  p.rdma_enabled = cfg.rdma_enabled;
  p.ucx_peer = ucx_peer;
  p.staged_payload_max = cfg.staged_payload_max;
  p.pull_window = cfg.pull_window;
  p.eager_max = cfg.eager_max;
  p.single_use = st.single_use;
  p.lease = cfg.transfer_lease;
  p.request_timeout = cfg.request_timeout;
  p.deadline = cfg.transfer_timeout + cfg.request_timeout; // as blocking_client waits
  p.get_into_result = cfg.get_into_result;
  p.defer_holds = static_cast<bool>(st.ctx.recycle_to);
  st.rules.emplace(p);
  apply(self, st.rules->start());
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
    if (st.done || !st.rules)
      return;
    if (dm.source == st.owner.address())
      apply(self, st.rules->on_owner_down(to_string(dm.reason)));
    else if (st.caller && dm.source == st.caller)
      apply(self, st.rules->on_caller_gone());
  });
  find_owner(
    self, st.ctx, h.owner(),
    [=](owner_route route, bool ucx_peer) { on_owner(self, std::move(route), ucx_peer); },
    [=](caf::error& err) {
      if (!self->state.done)
        fail(self, std::move(err));
    });
}

caf::behavior consumer(consumer_ptr self, consumer_context ctx) {
  self->state.ctx = std::move(ctx);
  if (auto* m = self->state.ctx.metrics)
    m->consumers_started->Increment();
  return {
    [=](copy_slice_atom, uint64_t seq) {
      auto& st = self->state;
      if (seq != st.get_seq || st.done)
        return;
      if (st.copying)
        copy_slice(self);
      else if (st.growing > 0)
        grow_room(self);
    },
    [=](get_deadline_atom, uint64_t seq) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (seq != st.get_seq || st.done)
        return caf::ok_atom::value;
      st.deadline = self->make_response_promise();
      return st.deadline;
    },
    [=](tick_atom, uint64_t seq) {
      auto& st = self->state;
      if (seq == st.get_seq && !st.done && st.rules)
        apply(self, st.rules->on_renew_tick());
    },
    [=](get_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      start(self, h);
      return self->state.rp;
    },
    [=](path_probe_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      self->state.probing = true;
      start(self, h);
      return self->state.rp;
    },
    [=](fetch_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      self->state.single_use = true;
      start(self, h);
      return self->state.rp;
    },
    [=](get_into_atom, const data_handle& h, mutable_bytes dest) {
      self->state.rp = self->make_response_promise();
      self->state.into = transfer::into::raw;
      self->state.dest = dest;
      start(self, h);
      return self->state.rp;
    },
    [=](get_into_atom, const data_handle& h, pinned_ptr& writer) {
      self->state.rp = self->make_response_promise();
      self->state.into = transfer::into::pinned_writer;
      self->state.block = std::move(writer);
      start(self, h);
      return self->state.rp;
    },
    [=](get_pinned_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      self->state.into = transfer::into::pinned_result;
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
