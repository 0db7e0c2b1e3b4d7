#include "actors/rendezvous/consumer.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>

#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <spdlog/spdlog.h>

#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rendezvous/bulk_copier.hpp"
#include "actors/rendezvous/consumer_metrics.hpp"
#include "actors/rendezvous/get_destination.hpp"
#include "actors/rendezvous/owner_lookup.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "actors/rendezvous/result_prefiller.hpp"
#include "actors/rendezvous/transfer.hpp"
#include "actors/rendezvous/warm_buffers.hpp"
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
  caf::actor_clock::time_point started; // the get came (its deadline counts from here)
  std::optional<transfer> rules; // the get's state machine
  data_handle handle;
  owner_actor owner;
  owner_route route; // how calls reach it: CAF requests or the control channel
  caf::actor_addr caller; // who asked for this get (monitored)
  bool caller_gone = false; // it went while the owner was looked up
  caf::response_promise rp;
  bool single_use = false; // fetch: the bytes only, the handle released
  bool probing = false;    // probe: the reply also names the path taken
  std::optional<transfer::count> last_path; // the last path decision
  get_destination bytes; // where the bytes go, and their room
  const chunk_bytes* chunk = nullptr; // the chunk being handled
  std::optional<transfer::send_hold> hold_later; // handed to the service
  caf::response_promise deadline; // answered as the get ends
  bool done = false;
  // An acquire is out. A get that fails meanwhile waits for its answer (at
  // most the request timeout) to hand back the lease it grants, then quits.
  bool acquire_out = false;
  bool quit_when_answered = false;
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
  // A new number: a late message of the get just ended (its deadline's
  // request, say) matches no get, even before the next one starts.
  fresh.get_seq = st.get_seq + 1;
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

/// A plain get's result went to its caller: the node's prefiller prepares
/// room for the next one of its size (result_prefiller.hpp), unless it is
/// small. (Not for a fetched payload, which goes back to the warm buffers
/// after its handler, nor a probe's result, which is dropped.)
void prefill_next(consumer_ptr self, uint64_t bytes) {
  auto& st = self->state;
  if (st.ctx.prefill && bytes >= warm_buffers::min_kept)
    caf::anon_send(st.ctx.prefill, prefill_atom::value, bytes);
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
  switch (st.bytes.kind()) {
    case transfer::into::buffer:
      if (st.probing)
        st.rp.deliver(std::move(st.bytes.result()), d.lease_id,
                      std::string{st.last_path ? to_string(st.last_path->path) : "none"},
                      std::string{st.last_path ? to_string(st.last_path->reason) : "none"});
      else if (st.single_use)
        st.rp.deliver(std::move(st.bytes.result()));
      else {
        st.rp.deliver(std::move(st.bytes.result()), d.lease_id);
        prefill_next(self, d.total_len);
      }
      break;
    case transfer::into::pinned_result:
      st.rp.deliver(std::move(st.bytes.result_block()), d.total_len, d.lease_id);
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
  // Replies may still be on their way: never reused.
  if (st.acquire_out)
    st.quit_when_answered = true;
  else
    self->quit();
}

/// Sends `cmd` when it ends a lease (a detach or a release) of a get that
/// is over; any other command is not this get's any more.
void send_lease_end(consumer_ptr self, const transfer::command& cmd) {
  auto& st = self->state;
  if (auto* d = std::get_if<transfer::send_detach>(&cmd))
    tell_owner(st.route, rv_detach_atom::value,
               encode(rv_detach_request{st.handle, d->lease_id, d->get_unfinished}));
  else if (auto* r = std::get_if<transfer::send_release>(&cmd))
    tell_owner(st.route, rv_release_atom::value,
               encode(rv_release_request{st.handle, r->lease_id, r->get_unfinished}));
}

/// The answer to an acquire sent before the get failed: the lease it
/// grants goes back to the owner (else it would stay, unused, until its
/// deadline), then the actor quits.
void return_late_lease(consumer_ptr self, const std::string* body) {
  auto& st = self->state;
  if (body && st.rules)
    if (auto answer = decode<rv_acquire_response>(*body))
      for (auto& cmd : st.rules->on_acquired(*answer))
        send_lease_end(self, cmd);
  if (st.quit_when_answered)
    self->quit();
}

/// A check of the bytes' room failed: the get fails (payload_too_large).
bool room_ok(consumer_ptr self, caf::error err) {
  if (!err)
    return true;
  apply(self, self->state.rules->on_error(std::move(err)));
  return false;
}

void write_chunk(consumer_ptr self, const transfer::write_chunk& w) {
  auto& st = self->state;
  st.bytes.write(w.offset, st.chunk->data(), st.chunk->size());
  if (st.ctx.metrics && !w.eager)
    st.ctx.metrics->chunks_pulled->Increment();
}

/// The copy-out is done: the bytes are the caller's, the destination
/// returns to the pool (or stays warm, a large one, for the next GET).
void copied_out(consumer_ptr self) {
  auto& st = self->state;
  st.ctx.reader->recycle(st.bytes.copied());
  apply(self, st.rules->on_get_done());
}

/// The next slice of a copy-out (finish_get).
void copy_slice(consumer_ptr self) {
  if (self->state.bytes.copy_step())
    return copied_out(self);
  self->send(self, copy_slice_atom::value, self->state.get_seq);
}

/// The GET's bytes, from its destination to where the caller wants them
/// (get and get_into copy out, so the pool space returns at once), then
/// the get is done: in slices here (other actors of this thread run
/// between them) or on the bulk copier, never a whole payload in one
/// handler (get_destination::finish_get).
void finish_get(consumer_ptr self, uint64_t len) {
  auto& st = self->state;
  switch (st.bytes.finish_get(len, st.ctx.warm.get())) {
    case get_destination::copy_out::none: return apply(self, st.rules->on_get_done());
    case get_destination::copy_out::slices: return copy_slice(self); // the first at once
    case get_destination::copy_out::copier: break;
  }
  auto seq = st.get_seq;
  copy_then(
    self, st.ctx.copier, st.bytes.job(), st.ctx.cfg.transfer_timeout,
    [=] {
      auto& st = self->state;
      if (st.get_seq == seq && !st.done)
        copied_out(self);
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
    self, st.handle.owner(), desc, st.bytes.block(), st.ctx.cfg.transfer_timeout,
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
      st.bytes.get_failed(); // a plain get's chunks go to a fresh buffer
      apply(self, st.rules->on_get_failed(nanos.error()));
    });
}

/// The direct GET's result grows a slice per message; then it is the
/// GET's destination.
void grow_room(consumer_ptr self) {
  auto& st = self->state;
  if (!st.bytes.grow_step(st.ctx.warm.get()))
    return self->send(self, copy_slice_atom::value, st.get_seq);
  apply(self, st.rules->on_destination(true));
}

/// A registered block for the GET (or for get_pinned's chunks), or the
/// plain get's own result buffer (into_result, grown by grow_room).
void alloc_destination(consumer_ptr self, const transfer::alloc_destination& a) {
  auto& st = self->state;
  if (!st.ctx.reader)
    return apply(self, st.rules->on_destination(false));
  if (a.into_result) {
    if (room_ok(self, st.bytes.start_direct(a.bytes, st.ctx.warm.get())))
      grow_room(self);
    return;
  }
  auto seq = st.get_seq;
  // get_pinned hands its block to the caller: never the shared warm one.
  bool warm_ok = a.for_get && st.bytes.kind() != transfer::into::pinned_result;
  st.ctx.reader->allocate(
    self, a.bytes, warm_ok, st.ctx.cfg.request_timeout,
    [=](caf::expected<pinned_ptr> block) {
      auto& st = self->state;
      if (st.get_seq != seq || st.done)
        return;
      if (block)
        st.bytes.set_block(std::move(*block));
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
  if (st.get_seq != seq)
    return;
  st.acquire_out = false;
  if (st.done)
    return return_late_lease(self, &body);
  auto answer = decode<rv_acquire_response>(body);
  if (!answer)
    return apply(self, st.rules->on_error(std::move(answer.error())));
  if (!eager) {
    apply(self, st.rules->on_acquired(*answer));
  } else {
    st.chunk = eager; // write_chunk reads it
    apply(self, st.rules->on_acquired(*answer, eager->size()));
    self->state.chunk = nullptr;
  }
#ifdef FERRY_TEST_HOOKS
  if (self->state.ctx.cfg.test_throw_on_acquire_answer)
    throw std::runtime_error("thrown by the test hook");
#endif
}

/// An exception out of a handler ends the actor, and CAF 0.17 leaves the
/// promise it held unanswered: the caller would wait out its own timeout.
/// So the get fails now with what was thrown (internal_error), its lease
/// goes back as on any failure, and the error is logged.
caf::error on_exception(consumer_ptr self, std::exception_ptr& eptr) {
  std::string what = "an exception of unknown type";
  try {
    std::rethrow_exception(eptr);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  auto& st = self->state;
  auto err = make_error(errc::internal_error, "the consumer of the get of " + to_string(st.handle)
                                                + " failed: " + what);
  spdlog::error("consumer: {}", describe(err));
  if (!st.rp.pending()) // answered already (a throw after it is only logged)
    return err;
  // The rules' own failure: the lease goes back, and a GET still running
  // into a caller's writer makes the error get_abandoned (the writer is
  // unsafe), whatever the cause.
  auto answer = err;
  try {
    if (st.rules)
      for (auto& cmd : st.rules->on_error(err)) {
        send_lease_end(self, cmd);
        if (auto* f = std::get_if<transfer::fail>(&cmd))
          answer = f->error;
      }
  } catch (...) { // the lease then ends with its deadline
  }
  fail(self, std::move(answer)); // (the actor ends with the handler anyway)
  return err;
}

void send_acquire(consumer_ptr self, rv_acquire_request req) {
  auto& st = self->state;
  auto seq = st.get_seq;
  bool eager = req.eager_max > 0;
  st.acquire_out = true;
  call_owner_acquire(
    self, st.route, st.ctx.cfg.request_timeout, encode(req), eager,
    [=](std::string& body, const chunk_bytes* bytes) {
      on_acquire_answer(self, seq, body, bytes);
    },
    [=](caf::error& err) mutable {
      auto& st = self->state;
      if (st.get_seq != seq)
        return;
      st.acquire_out = false;
      if (st.done)
        return return_late_lease(self, nullptr);
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
               rv_detach_request{st.handle, c.lease_id, c.get_unfinished});
        } else if constexpr (std::is_same_v<T, transfer::send_release>) {
          tell(self, rv_release_atom::value,
               rv_release_request{st.handle, c.lease_id, c.get_unfinished});
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
          room_ok(self, st.bytes.reserve(c.bytes, st.ctx.warm.get()));
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
  // A caller gone before its owner was found: no acquire, so no lease that
  // would be delivered to nobody.
  if (st.caller_gone)
    return fail(self, make_error(errc::timeout, "the caller of the get of "
                                                  + to_string(st.handle)
                                                  + " went away"));
  st.owner = route.owner;
  st.route = std::move(route);
  self->monitor(st.owner);
  transfer::params p;
  p.handle = st.handle;
  p.dest = st.bytes.kind();
  p.room = st.bytes.caller_room();
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
  // Half a request timeout inside the caller's wait (blocking_client waits
  // transfer_timeout + request_timeout), counted from when the get came (the
  // owner's lookup took some): a stuck get answers its caller with where it
  // stuck, instead of the caller's own bare timeout.
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(self->clock().now()
                                                                    - st.started);
  p.deadline = std::max(std::chrono::milliseconds{1},
                        cfg.transfer_timeout + cfg.request_timeout / 2 - took);
  p.get_into_result = cfg.get_into_result;
  p.defer_holds = static_cast<bool>(st.ctx.recycle_to);
  st.rules.emplace(p);
  apply(self, st.rules->start());
}

void start(consumer_ptr self, const data_handle& h) {
  auto& st = self->state;
  ++st.get_seq;
  st.started = self->clock().now();
  st.handle = h;
  // A caller that gives up (its own timeout, or it ended) gets nothing: the
  // transfer stops and its lease goes back instead of being held for nobody.
  if (const auto& sender = st.rp.source()) { // the promise took the sender
    st.caller = sender->address();
    self->monitor(sender);
  }
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.done)
      return;
    if (st.caller && dm.source == st.caller) {
      if (!st.rules) // no transfer yet: none starts (on_owner)
        st.caller_gone = true;
      else
        apply(self, st.rules->on_caller_gone());
    } else if (st.rules && dm.source == st.owner.address()) {
      apply(self, st.rules->on_owner_down(to_string(dm.reason)));
    }
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
  self->set_exception_handler(
    [=](caf::scheduled_actor*, std::exception_ptr& eptr) { return on_exception(self, eptr); });
  // Told to stop (its service ends with the node): a get still out fails
  // now, where a dropped promise would leave its caller waiting out its
  // own timeout.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (msg.reason == caf::exit_reason::normal)
      return;
    auto& st = self->state;
    if (!st.done && st.rp.pending())
      fail(self, make_error(errc::draining, "the node is stopping"));
    self->quit(std::move(msg.reason));
  });
  return {
    [=](copy_slice_atom, uint64_t seq) {
      auto& st = self->state;
      if (seq != st.get_seq || st.done)
        return;
      if (st.bytes.copying())
        copy_slice(self);
      else if (st.bytes.growing())
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
      self->state.bytes = get_destination::caller_memory(dest);
      start(self, h);
      return self->state.rp;
    },
    [=](get_into_atom, const data_handle& h, pinned_ptr& writer) {
      self->state.rp = self->make_response_promise();
      self->state.bytes = get_destination::caller_writer(std::move(writer));
      start(self, h);
      return self->state.rp;
    },
    [=](get_pinned_atom, const data_handle& h) {
      self->state.rp = self->make_response_promise();
      self->state.bytes = get_destination{transfer::into::pinned_result};
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
