#include "actors/rendezvous/consumer_service.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <prometheus/counter.h>

#include "actors/rendezvous/consumer_metrics.hpp"
#include "actors/rendezvous/deferred_holds.hpp"
#include "actors/rendezvous/owner_lookup.hpp"
#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"

namespace ferry {

namespace {

/// Consumers kept for the next get, at most this many (a burst of
/// concurrent gets spawns more; those beyond it quit when done).
constexpr size_t max_idle_consumers = 8;

/// Tells an owner to hold a finished get's lease with no deadline.
void send_hold(const deferred_holds::entry& e, consumer_metrics* m) {
  if (m)
    m->holds_sent->Increment();
  caf::anon_send(caf::actor_cast<owner_actor>(e.owner), rv_lease_renew_atom::value,
                 encode(rv_lease_renew_request{e.handle, e.lease_id, true}));
}

struct service_state {
  consumer_context ctx;
  // Every consumer this service spawned that still runs (monitored): a
  // consumer out on a get, or one that waits out the answers of a get that
  // failed before it quits (up to a request timeout, to a peer that went),
  // stops with the service; the node's stop waits for every actor.
  std::map<caf::actor_addr, caf::actor> live;
  std::vector<caf::actor> idle; // consumers that finished cleanly
  deferred_holds holds;
  std::optional<deferred_holds::clock_type::time_point> tick_for; // armed timer
  ~service_state() {
    for (auto& [addr, c] : live)
      caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    for (auto& e : holds.take_all()) // stopping: every hold goes now
      send_hold(e, ctx.metrics);
  }
  static inline const char* name = "ferry.consumer_service";
};

using service_ptr = consumer_service_actor::stateful_pointer<service_state>;

/// An idle consumer, or a new one that reports back here when done.
caf::actor take_consumer(service_ptr self) {
  auto& idle = self->state.idle;
  if (!idle.empty()) {
    auto c = std::move(idle.back());
    idle.pop_back();
    return c;
  }
  auto c = spawn_consumer(self->system(), self->state.ctx);
  self->monitor(c);
  self->state.live.emplace(c.address(), c);
  return c;
}

void keep_idle(service_ptr self, caf::actor& c) {
  if (self->state.idle.size() < max_idle_consumers)
    self->state.idle.push_back(std::move(c));
  else
    self->send_exit(c, caf::exit_reason::user_shutdown);
}

/// The caller ends the lease: a hold still waiting for it is not sent.
void drop_hold(service_ptr self, const data_handle& h, uint64_t lease) {
  auto* m = self->state.ctx.metrics;
  if (self->state.holds.cancel(h, lease) && m)
    m->holds_dropped->Increment();
}

/// Arms the hold timer for `due` unless it already fires by then.
void arm_holds(service_ptr self, deferred_holds::clock_type::time_point due) {
  auto& st = self->state;
  if (st.tick_for && *st.tick_for <= due)
    return;
  auto now = self->clock().now();
  self->delayed_send(self, due > now ? due - now : caf::timespan{0}, tick_atom::value);
  st.tick_for = due;
}

/// Resolves the owner of `h`, then sends it one control call whose JSON
/// answer `on_body` turns into the promised reply.
template <class Promise, class Atom, class Request, class OnBody>
void call_owner(service_ptr self, Promise rp, const data_handle& h, Atom atom,
                Request req, OnBody on_body) {
  auto timeout = self->state.ctx.cfg.request_timeout;
  find_owner(
    self, self->state.ctx, h.owner(),
    [=](owner_route route, bool) mutable {
      call_owner_json(
        self, route, timeout, atom, encode(req),
        [=](std::string& body) mutable { on_body(rp, body); },
        [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    },
    [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
}

/// A hold that is due, by the way the peer directory says calls to its
/// owner go (the control channel, or CAF requests to the owner it names).
void send_hold_by_route(service_ptr self, const deferred_holds::entry& e) {
  auto& ctx = self->state.ctx;
  if (ctx.metrics)
    ctx.metrics->holds_sent->Increment();
  auto body = encode(rv_lease_renew_request{e.handle, e.lease_id, true});
  auto known = ctx.peers ? ctx.peers->find(e.handle.owner()) : std::nullopt;
  auto route = caf_route(ctx, e.owner, e.handle.owner());
  if (known && known->control_am && ctx.channel && known->owner == e.owner)
    route.channel = ctx.channel;
  tell_owner(route, rv_lease_renew_atom::value, std::move(body));
}

consumer_service_actor::behavior_type service(service_ptr self,
                                              consumer_context ctx) {
  self->state.ctx = std::move(ctx);
  self->state.ctx.recycle_to = caf::actor_cast<caf::actor>(self);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    st.live.erase(down.source);
    st.idle.erase(std::remove_if(st.idle.begin(), st.idle.end(),
                                 [&](const caf::actor& c) { return c.address() == down.source; }),
                  st.idle.end());
  });
  return {
    [=](consumer_idle_atom, caf::actor& c) { keep_idle(self, c); },
    [=](consumer_idle_atom, caf::actor& c, const data_handle& h, uint64_t lease,
        caf::actor& owner, uint64_t within_ms) {
      keep_idle(self, c);
      auto due = self->clock().now() + std::chrono::milliseconds{within_ms};
      self->state.holds.add({h, lease, std::move(owner), due});
      arm_holds(self, due);
    },
    [=](tick_atom) {
      auto& st = self->state;
      st.tick_for.reset();
      for (auto& e : st.holds.take_due(self->clock().now()))
        send_hold_by_route(self, e);
      if (auto next = st.holds.next_due())
        arm_holds(self, *next);
    },
    [=](get_atom, const data_handle& h) {
      auto rp = self->make_response_promise<byte_buffer, uint64_t>();
      return rp.delegate(take_consumer(self), get_atom::value, h);
    },
    [=](path_probe_atom, const data_handle& h) {
      auto rp = self->make_response_promise<byte_buffer, uint64_t, std::string,
                                            std::string>();
      return rp.delegate(take_consumer(self), path_probe_atom::value, h);
    },
    [=](fetch_atom, const data_handle& h) {
      auto rp = self->make_response_promise<byte_buffer>();
      return rp.delegate(take_consumer(self), fetch_atom::value, h);
    },
    [=](get_into_atom, const data_handle& h, mutable_bytes dest) {
      auto rp = self->make_response_promise<uint64_t, uint64_t>();
      return rp.delegate(take_consumer(self), get_into_atom::value, h, dest);
    },
    [=](get_into_atom, const data_handle& h, pinned_ptr& writer) {
      auto rp = self->make_response_promise<uint64_t, uint64_t>();
      return rp.delegate(take_consumer(self), get_into_atom::value, h,
                         std::move(writer));
    },
    [=](get_pinned_atom, const data_handle& h) {
      auto rp = self->make_response_promise<pinned_ptr, uint64_t, uint64_t>();
      return rp.delegate(take_consumer(self), get_pinned_atom::value, h);
    },
    [=](pool_alloc_atom, uint64_t bytes) -> caf::result<pinned_ptr> {
      const auto& reader = self->state.ctx.reader;
      if (!reader)
        return make_error(errc::pool_exhausted,
                          "no registered memory on this node (no UCX)");
      auto rp = self->make_response_promise<pinned_ptr>();
      self->request(reader->pool(), self->state.ctx.cfg.request_timeout,
                    pool_alloc_atom::value, bytes, true)
        .then([=](pinned_ptr& block) mutable { rp.deliver(std::move(block)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
    [=](metadata_atom, const data_handle& h) {
      auto rp = self->make_response_promise<uint64_t, uint64_t, bool>();
      call_owner(self, rp, h, rv_metadata_atom::value, rv_metadata_request{h},
                 [](auto& p, const std::string& body) {
                   auto md = decode<rv_metadata_response>(body);
                   if (!md)
                     p.deliver(md.error());
                   else
                     p.deliver(md->total_len, md->refcount, md->pinned);
                 });
      return rp;
    },
    [=](ref_atom, const data_handle& h) {
      auto rp = self->make_response_promise<uint64_t>();
      call_owner(self, rp, h, rv_ref_atom::value, rv_ref_request{h},
                 [](auto& p, const std::string& body) {
                   auto r = decode<rv_ref_response>(body);
                   if (!r)
                     p.deliver(r.error());
                   else
                     p.deliver(r->refcount);
                 });
      return rp;
    },
    [=](detach_atom, const data_handle& h, uint64_t lease) {
      drop_hold(self, h, lease);
      auto rp = self->make_response_promise<caf::ok_atom>();
      call_owner(self, rp, h, rv_detach_atom::value,
                 rv_detach_request{h, lease},
                 [](auto& p, const std::string&) {
                   p.deliver(caf::ok_atom::value);
                 });
      return rp;
    },
    [=](release_atom, const data_handle& h, uint64_t lease) {
      drop_hold(self, h, lease);
      auto rp = self->make_response_promise<uint64_t, bool>();
      call_owner(self, rp, h, rv_release_atom::value,
                 rv_release_request{h, lease},
                 [](auto& p, const std::string& body) {
                   auto r = decode<rv_release_response>(body);
                   if (!r)
                     p.deliver(r.error());
                   else
                     p.deliver(r->refcount, r->freed);
                 });
      return rp;
    },
  };
}

} // namespace

consumer_service_actor spawn_consumer_service(caf::actor_system& sys,
                                              consumer_context ctx) {
  return sys.spawn(service, std::move(ctx));
}

} // namespace ferry
