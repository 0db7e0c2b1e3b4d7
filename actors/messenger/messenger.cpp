// The messenger actor's behaviour: the messages it answers, local callers'
// and peers' messengers', each a few lines over the parts in
// messenger_state.hpp; and what it does when a peer's messenger goes down.
#include "actors/messenger/messenger.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <spdlog/spdlog.h>

#include "actors/messenger/messenger_state.hpp"
#include "protocol/errors.hpp"

namespace ferry::messenger_impl {

namespace {

/// Fails every call to `peer` and every stream with it (the peer's
/// messenger went away, or the session with its node ended).
void fail_peer(messenger_ptr self, const caf::actor_addr& peer, const std::string& why) {
  auto& st = self->state;
  for (auto i = st.calls.begin(); i != st.calls.end();) {
    if (i->second.peer == peer) {
      auto fail = std::move(i->second.fail);
      i = st.calls.erase(i);
      fail(make_error(errc::peer_down, why));
    } else {
      ++i;
    }
  }
  std::vector<uint64_t> failing;
  for (auto& [id, s] : st.inbound)
    if (s.producer.address() == peer)
      failing.push_back(id);
  for (auto id : failing)
    fail_inbound(self, id, why, false);
  for (auto i = st.outbound.begin(); i != st.outbound.end();) {
    if (i->second.consumer.address() == peer) {
      unstage_items(self, i->second);
      i = st.outbound.erase(i);
    } else {
      ++i;
    }
  }
  update_stream_gauge(self);
}

void on_down(messenger_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  st.handlers.forget_actor(dm.source);
  if (st.monitored.erase(dm.source) == 0)
    return;
  fail_peer(self, dm.source, "the peer's messenger went down (" + to_string(dm.reason) + ")");
}

/// The gateway's word that the session with `node` ended: every peer
/// messenger watched there is done with.
void on_peer_down(messenger_ptr self, const caf::node_id& node) {
  const auto& sender = self->current_sender();
  if (!sender || sender->node() != self->node())
    return;
  std::vector<caf::actor_addr> gone;
  for (const auto& addr : self->state.monitored)
    if (addr.node() == node)
      gone.push_back(addr);
  for (const auto& addr : gone) {
    self->state.monitored.erase(addr); // watched again if it is used again
    self->demonitor(addr);
    fail_peer(self, addr, "the session with the peer's node ended");
  }
}

template <class Promise>
auto deliver_to(Promise rp) {
  return [rp](caf::expected<envelope> out) mutable {
    if (out)
      rp.deliver(std::move(*out));
    else
      rp.deliver(std::move(out.error()));
  };
}

/// A reply may carry a staged payload of its own: fetched here, within
/// what is left of the call.
void take_reply(messenger_ptr self, caf::typed_response_promise<envelope> rp,
                envelope reply, deadline until) {
  auto ref = messenger::take_staged(reply.hdrs);
  if (!ref.error.empty())
    { rp.deliver(make_error(errc::protocol_violation, ref.error)); return; }
  if (until)
    ref.budget = left_until(*until);
  resolve(
    self, std::move(reply), ref, message_kind::unary,
    [=](envelope ready) mutable { rp.deliver(std::move(ready)); },
    [=](fetch_outcome, caf::error err, messenger::fetch_bound) mutable {
      rp.deliver(make_error(errc::io_error,
                            "the reply's staged payload: " + describe(err)));
    });
}

} // namespace

messenger_actor::behavior_type messenger_behavior(messenger_ptr self,
                                                  messenger_params params) {
  self->state.p = std::move(params);
  self->state.threads = messenger::spawn_handler_threads(
    self->system(), self->state.p.cfg.handler_threads, self->state.p.warm);
  self->link_to(self->state.threads);
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  return {
    // -- local callers --
    [=](msg_send_atom, uint64_t node, envelope& env) -> caf::result<caf::ok_atom> {
      auto target = messenger_of(self, node);
      if (!target)
        return std::move(target.error());
      auto rp = self->make_response_promise<caf::ok_atom>();
      auto to = *target;
      prepare(self, to, std::move(env), std::nullopt,
              [=](caf::expected<envelope> out) mutable {
                if (!out)
                  { rp.deliver(std::move(out.error())); return; }
                self->send(caf::actor_cast<messenger_actor>(to), wire_send_atom::value,
                           std::move(*out));
                rp.deliver(caf::ok_atom::value);
              });
      return rp;
    },
    [=](msg_call_atom, uint64_t node, envelope& env,
        uint64_t timeout_ms) -> caf::result<envelope> {
      auto target = messenger_of(self, node);
      if (!target)
        return std::move(target.error());
      auto rp = self->make_response_promise<envelope>();
      deadline until;
      if (timeout_ms > 0)
        until = clock_type::now() + std::chrono::milliseconds{timeout_ms};
      auto to = *target;
      auto name = env.handler;
      prepare(self, to, std::move(env), until,
              [=](caf::expected<envelope> out) mutable {
                if (!out)
                  { rp.deliver(std::move(out.error())); return; }
                auto staged = staged_handle(*out);
                auto id = track(self, to, [=](caf::error e) mutable {
                  unstage(self, staged);
                  rp.deliver(std::move(e));
                });
                self
                  ->request(caf::actor_cast<messenger_actor>(to), call_bound(self, until),
                            wire_call_atom::value, std::move(*out))
                  .then(
                    [=](envelope& reply) mutable {
                      if (untrack(self, id, to))
                        take_reply(self, rp, std::move(reply), until);
                    },
                    [=](caf::error& err) mutable {
                      if (!untrack(self, id, to))
                        return;
                      // At the caller's own timeout the receiver may still
                      // be reading: the copy's TTL (the same deadline) ends it.
                      if (err != caf::sec::request_timeout)
                        unstage(self, staged);
                      rp.deliver(with_context(err, "the call to '" + name + "'"));
                    });
              });
      return rp;
    },
    [=](msg_stream_atom, uint64_t node, envelope& env) -> caf::result<uint64_t> {
      auto target = messenger_of(self, node);
      if (!target)
        return std::move(target.error());
      auto rp = self->make_response_promise<uint64_t>();
      auto to = *target;
      auto id = self->state.next_stream++;
      auto window = std::clamp<uint32_t>(self->state.p.cfg.stream_window, 1,
                                         max_stream_window);
      auto& s = self->state.inbound.emplace(id, inbound_stream{window}).first->second;
      s.producer = to;
      watch(self, to);
      update_stream_gauge(self);
      auto name = env.handler;
      auto forget = [=](caf::error err) mutable {
        self->state.inbound.erase(id);
        update_stream_gauge(self);
        rp.deliver(std::move(err));
      };
      prepare(self, to, std::move(env), std::nullopt,
              [=](caf::expected<envelope> out) mutable {
                if (!out)
                  { forget(std::move(out.error())); return; }
                auto staged = staged_handle(*out);
                auto call = track(self, to, [=](caf::error e) mutable {
                  unstage(self, staged);
                  forget(std::move(e));
                });
                self
                  ->request(caf::actor_cast<messenger_actor>(to),
                            call_bound(self, std::nullopt), wire_open_atom::value,
                            std::move(*out), id, window)
                  .then(
                    [=](uint64_t producer_id) mutable {
                      if (!untrack(self, call, to))
                        return;
                      auto i = self->state.inbound.find(id);
                      if (i == self->state.inbound.end()) // cancelled meanwhile
                        { self->send(caf::actor_cast<messenger_actor>(to),
                                          wire_stop_atom::value, producer_id,
                                          std::string{"cancelled"}); return; }
                      i->second.producer_id = producer_id;
                      rp.deliver(id);
                    },
                    [=](caf::error& err) mutable {
                      if (!untrack(self, call, to))
                        return;
                      if (err != caf::sec::request_timeout)
                        unstage(self, staged);
                      forget(with_context(err, "opening a stream from '" + name + "'"));
                    });
              });
      return rp;
    },
    [=](stream_next_atom, uint64_t id) -> caf::result<bool, envelope> {
      auto i = self->state.inbound.find(id);
      if (i == self->state.inbound.end())
        return make_error(errc::invalid_argument,
                          "no open stream " + std::to_string(id) + " on this node");
      if (i->second.waiting)
        return make_error(errc::invalid_argument,
                          "stream " + std::to_string(id) + " already has a take waiting");
      i->second.waiting = self->make_response_promise<bool, envelope>();
      auto rp = *i->second.waiting;
      serve(self, id);
      return rp;
    },
    [=](stream_cancel_atom, uint64_t id) {
      auto i = self->state.inbound.find(id);
      if (i == self->state.inbound.end())
        return;
      auto& s = i->second;
      if (s.producer && s.producer_id != 0)
        self->send(caf::actor_cast<messenger_actor>(s.producer), wire_stop_atom::value,
                   s.producer_id, std::string{"cancelled by the caller"});
      if (s.waiting)
        s.waiting->deliver(make_error(errc::stream_ended, "cancelled"));
      self->state.inbound.erase(i);
      update_stream_gauge(self);
    },
    [=](bind_atom, const std::string& name, caf::actor& a) -> caf::result<caf::ok_atom> {
      if (auto err = self->state.handlers.bind(name, a); !err.empty())
        return make_error(errc::invalid_argument, err);
      self->monitor(a);
      return caf::ok_atom::value;
    },
    [=](bind_atom, const std::string& name,
        messenger::unary_function_ptr& fn) -> caf::result<caf::ok_atom> {
      if (auto err = self->state.handlers.bind(name, fn); !err.empty())
        return make_error(errc::invalid_argument, err);
      return caf::ok_atom::value;
    },
    [=](bind_atom, const std::string& name,
        messenger::stream_function_ptr& fn) -> caf::result<caf::ok_atom> {
      if (auto err = self->state.handlers.bind(name, fn); !err.empty())
        return make_error(errc::invalid_argument, err);
      return caf::ok_atom::value;
    },
    [=](peer_down_atom, const caf::node_id& node) { on_peer_down(self, node); },
    [=](unbind_atom, const std::string& name) {
      return self->state.handlers.unbind(name);
    },
    // -- peers' messengers --
    [=](wire_send_atom, envelope& env) {
      auto caller = caf::actor_cast<caf::actor>(self->current_sender());
      auto name = env.handler;
      handle_incoming(self, std::move(env), message_kind::fire_and_forget, caller,
                      [=](std::optional<caf::expected<envelope>> out) {
                        if (out && !*out)
                          spdlog::warn("messenger: a message for '{}' was dropped: {}",
                                       name, describe(out->error()));
                      });
    },
    [=](wire_call_atom, envelope& env) -> caf::result<envelope> {
      // Before the promise: making it takes the sender out of the message.
      auto caller = caf::actor_cast<caf::actor>(self->current_sender());
      auto rp = self->make_response_promise<envelope>();
      handle_incoming(self, std::move(env), message_kind::unary, caller,
                      [=](std::optional<caf::expected<envelope>> out) mutable {
                        if (out) // none: dropped at the caller's budget, no reply
                          deliver_to(rp)(std::move(*out));
                      });
      return rp;
    },
    [=](wire_open_atom, envelope& env, uint64_t consumer_id,
        uint32_t window) -> caf::result<uint64_t> {
      auto caller = caf::actor_cast<caf::actor>(self->current_sender());
      if (!caller)
        return make_error(errc::protocol_violation, "a stream needs a caller");
      auto ref = messenger::take_staged(env.hdrs);
      auto name = env.handler;
      const auto* h = self->state.handlers.find(name);
      if (!ref.error.empty())
        return make_error(errc::protocol_violation, ref.error);
      if (!h) {
        count_call(self, name, false, "unknown_handler");
        return unknown_handler(self, name);
      }
      auto* fn = std::get_if<messenger::stream_function_ptr>(h);
      if (!fn) {
        count_call(self, name, true, "error");
        return make_error(errc::invalid_argument,
                          "handler '" + name + "' is not a stream handler");
      }
      auto stream_fn = *fn;
      auto sft = self->state.p.cfg.staged_fetch_timeout;
      // Only now: a promise made takes the reply over from a returned error.
      auto rp = self->make_response_promise<uint64_t>();
      resolve(
        self, std::move(env), ref, message_kind::unary,
        [=](envelope ready) mutable {
          open_outbound(self, rp, stream_fn, std::move(ready), caller, consumer_id,
                        window);
        },
        [=](fetch_outcome o, caf::error err, messenger::fetch_bound by) mutable {
          count_call(self, name, true, "fetch_failed");
          if (auto told = refusal(o, std::move(err), by, message_kind::unary, sft))
            rp.deliver(std::move(*told));
        });
      return rp;
    },
    [=](wire_item_atom, uint64_t id, envelope& item) { on_item(self, id, std::move(item)); },
    [=](wire_end_atom, uint64_t id, const std::string& error) {
      auto i = self->state.inbound.find(id);
      if (i == self->state.inbound.end()
          || self->current_sender()
               != caf::actor_cast<caf::strong_actor_ptr>(i->second.producer))
        return;
      i->second.inbox.end(error.substr(0, messenger::envelope_limits::max_header_value));
      serve(self, id);
    },
    [=](wire_credit_atom, uint64_t id, uint32_t n) {
      auto i = self->state.outbound.find(id);
      if (i == self->state.outbound.end()
          || self->current_sender()
               != caf::actor_cast<caf::strong_actor_ptr>(i->second.consumer))
        return;
      i->second.credit.granted(n);
      pump(self, id);
    },
    [=](wire_stop_atom, uint64_t id, const std::string& why) {
      auto i = self->state.outbound.find(id);
      if (i == self->state.outbound.end()
          || self->current_sender()
               != caf::actor_cast<caf::strong_actor_ptr>(i->second.consumer))
        return;
      spdlog::info("messenger: stream {} stopped by its consumer: {}", id,
                   why.substr(0, 256));
      unstage_items(self, i->second);
      self->state.outbound.erase(i);
      update_stream_gauge(self);
    },
  };
}

} // namespace ferry::messenger_impl

namespace ferry {

messenger_actor spawn_messenger(caf::actor_system& sys, messenger_params params) {
  return sys.spawn(messenger_impl::messenger_behavior, std::move(params));
}

} // namespace ferry
