#include "actors/messenger.hpp"

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>

#include "actors/messenger_metrics.hpp"
#include "actors/staged_fetch.hpp"
#include "actors/stream_window.hpp"
#include "protocol/errors.hpp"
#include "protocol/staging_headers.hpp"

namespace ferry {

namespace {

using messenger::envelope;
using messenger::message_kind;
using clock_type = std::chrono::steady_clock;
using deadline = std::optional<clock_type::time_point>;

/// The most items a peer may ask a producer here to run ahead.
constexpr uint32_t max_stream_window = 256;

/// A stream this node consumes (its caller is local).
struct inbound_stream {
  caf::actor producer;      // the producing node's messenger
  uint64_t producer_id = 0; // the stream's id there (0 until it opened)
  messenger::stream_inbox inbox;
  std::optional<caf::typed_response_promise<bool, envelope>> waiting;
  explicit inbound_stream(uint32_t window) : inbox(window) {
  }
};

/// A stream this node produces (from one of its stream handlers).
struct outbound_stream {
  caf::actor consumer;      // the caller's messenger
  uint64_t consumer_id = 0; // the stream's id there
  messenger::stream_credit credit;
  messenger::item_source_ptr source;
  // The handles of the latest staged items (at most two windows: older ones
  // were fetched before the consumer granted the credit that followed them).
  // A stream stopped early, or whose consumer went down, unstages them, so
  // items it will never fetch do not wait for their TTL.
  std::deque<data_handle> staged;
  explicit outbound_stream(uint32_t window) : credit(window) {
  }
};

struct messenger_state {
  messenger_params p;
  messenger::handler_table handlers;
  caf::actor threads; // function handlers run here
  // Calls waiting on a peer, failed at once when it goes down.
  struct pending {
    caf::actor_addr peer;
    std::function<void(caf::error)> fail;
  };
  std::map<uint64_t, pending> calls;
  uint64_t next_call = 1;
  std::map<uint64_t, inbound_stream> inbound;
  std::map<uint64_t, outbound_stream> outbound;
  uint64_t next_stream = 1;
  std::set<caf::actor_addr> monitored;
  static inline const char* name = "ferry.messenger";
};

using messenger_ptr = messenger_actor::stateful_pointer<messenger_state>;

messenger_metrics* metrics(messenger_ptr self) {
  return self->state.p.metrics;
}

void update_stream_gauge(messenger_ptr self) {
  if (auto* m = metrics(self))
    m->streams->Set(static_cast<double>(self->state.inbound.size()
                                        + self->state.outbound.size()));
}

bool is_self(messenger_ptr self, const caf::actor& a) {
  return a.address() == self->address();
}

void watch(messenger_ptr self, const caf::actor& peer) {
  if (!peer || is_self(self, peer))
    return;
  if (self->state.monitored.insert(peer.address()).second)
    self->monitor(peer);
}

/// The messenger of `node`: this one, or a connected peer's.
caf::expected<caf::actor> messenger_of(messenger_ptr self, uint64_t node) {
  const auto& p = self->state.p;
  if (node == p.worker_id)
    return caf::actor_cast<caf::actor>(self);
  if (p.peers)
    if (auto e = p.peers->find(node); e && e->messenger)
      return e->messenger;
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(node));
  return make_error(errc::unknown_owner, std::string{"node "} + id
                                           + " is not a connected peer of this node");
}

std::chrono::milliseconds left_until(clock_type::time_point t) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
    t - clock_type::now());
  return std::max(left, std::chrono::milliseconds{1});
}

/// The bound on a request that waits for a peer's handler.
std::chrono::milliseconds call_bound(messenger_ptr self, const deadline& until) {
  const auto& cfg = self->state.p.cfg;
  return until ? left_until(*until) : cfg.transfer_timeout + cfg.request_timeout;
}

uint64_t track(messenger_ptr self, const caf::actor& peer,
               std::function<void(caf::error)> fail) {
  auto id = self->state.next_call++;
  if (!is_self(self, peer)) {
    self->state.calls.emplace(id, messenger_state::pending{peer.address(),
                                                           std::move(fail)});
    watch(self, peer);
  }
  return id;
}

/// False when the call was already failed (its peer went down).
bool untrack(messenger_ptr self, uint64_t id, const caf::actor& peer) {
  if (is_self(self, peer))
    return true;
  return self->state.calls.erase(id) > 0;
}

caf::error with_context(caf::error err, const std::string& what) {
  if (err == caf::sec::request_timeout)
    return make_error(errc::timeout, what + ": no answer in time");
  if (err == caf::sec::request_receiver_down)
    return make_error(errc::peer_down, what + ": the peer is gone");
  return err;
}

// -- sending ----------------------------------------------------------------------

/// Readies `env` for `target`: drops staging headers it carries from
/// elsewhere, checks its bounds, and stages its payload when it is above
/// the threshold and leaves this node. Calls k with the envelope to send.
template <class Continue>
void prepare(messenger_ptr self, const caf::actor& target, envelope env,
             deadline until, Continue k) {
  messenger::take_staged(env.hdrs); // a forwarded _rv or budget never leaks
  auto staged = !is_self(self, target)
                && messenger::stages(env.payload.size(),
                                     self->state.p.cfg.staging_threshold);
  auto payload = std::move(env.payload);
  if (auto problem = messenger::check_envelope(env); !problem.empty())
    { k(caf::expected<envelope>{make_error(errc::invalid_argument, problem)}); return; }
  if (!staged) {
    env.payload = std::move(payload);
    if (auto problem = messenger::check_envelope(env); !problem.empty())
      { k(caf::expected<envelope>{make_error(
        errc::invalid_argument,
        problem + " (raise --staging-threshold's limit or send it by handle)")}); return; }
    { k(caf::expected<envelope>{std::move(env)}); return; }
  }
  const auto& cfg = self->state.p.cfg;
  // Nobody fetches it after the caller gave up, or after a transfer's time.
  auto ttl = until ? left_until(*until) : cfg.transfer_timeout;
  self
    ->request(self->state.p.owner, cfg.request_timeout + cfg.transfer_timeout,
              register_pinned_atom::value, std::move(payload),
              static_cast<uint64_t>(ttl.count()), false)
    .then(
      [=](data_handle& h) mutable {
        if (auto* m = metrics(self))
          m->staged_payloads->Increment();
        std::optional<std::chrono::nanoseconds> left;
        if (until)
          left = *until - clock_type::now();
        messenger::write_staged(env.hdrs, h, left);
        k(caf::expected<envelope>{std::move(env)});
      },
      [=](caf::error& err) mutable {
        k(caf::expected<envelope>{with_context(err, "staging the payload")});
      });
}

/// The handle a prepared envelope carries (it was staged), if any.
std::optional<data_handle> staged_handle(const envelope& e) {
  auto i = e.hdrs.find(messenger::handle_header);
  if (i == e.hdrs.end())
    return std::nullopt;
  return parse_data_handle(i->second);
}

/// A call that failed with an answer (an error reply, its peer gone) no
/// longer needs the copy staged for it: the owner drops it now rather than
/// at its TTL. Harmless when the receiver already released it, and refused
/// while a receiver's lease still reads it.
void unstage(messenger_ptr self, const std::optional<data_handle>& h) {
  if (!h)
    return;
  self->request(self->state.p.owner, self->state.p.cfg.request_timeout,
                unstage_atom::value, *h)
    .then([](bool) {}, [](caf::error&) {});
}

/// A stream that ends early drops the copies staged for its items (those
/// already fetched are gone; one being fetched is kept by its lease).
void unstage_items(messenger_ptr self, outbound_stream& s) {
  for (auto& h : s.staged)
    unstage(self, h);
  s.staged.clear();
}

// -- receiving: the staged payload ---------------------------------------------------

/// How a fetch ended, for the metrics and for what the message does next.
enum class fetch_outcome { ok, timeout, over_limit, failed };

fetch_outcome classify(const caf::error& err) {
  if (is(err, errc::payload_too_large))
    return fetch_outcome::over_limit;
  if (is(err, errc::timeout) || err == caf::sec::request_timeout)
    return fetch_outcome::timeout;
  return fetch_outcome::failed;
}

void count_fetch(messenger_ptr self, fetch_outcome o) {
  auto* m = metrics(self);
  if (!m)
    return;
  switch (o) {
    case fetch_outcome::ok: m->fetches_ok->Increment(); break;
    case fetch_outcome::timeout: m->fetches_timeout->Increment(); break;
    case fetch_outcome::over_limit: m->fetches_over_limit->Increment(); break;
    case fetch_outcome::failed: m->fetches_failed->Increment(); break;
  }
}

/// Fetches the payload `ref` names into `env`, within the limit its kind
/// and budget give. Calls on_ready(envelope) or on_failed(outcome, error,
/// bound that ended it).
template <class OnReady, class OnFailed>
void resolve(messenger_ptr self, envelope env, const messenger::staged_ref& ref,
             message_kind kind, OnReady on_ready, OnFailed on_failed) {
  if (!ref.handle)
    { on_ready(std::move(env)); return; }
  const auto& cfg = self->state.p.cfg;
  auto limit = messenger::limit_for(kind, ref.budget, cfg.staged_fetch_timeout);
  staged_fetch_params fp;
  fp.consumer = self->state.p.consumer;
  fp.handle = *ref.handle;
  if (limit)
    fp.limit = limit->after;
  fp.bound = cfg.transfer_timeout + cfg.request_timeout;
  auto fetcher = spawn_staged_fetch(self->system(), fp);
  if (auto* m = metrics(self))
    m->fetches_in_flight->Increment();
  auto bound = (limit ? std::min(limit->after, fp.bound) : fp.bound)
               + cfg.request_timeout;
  auto by = limit ? limit->by : messenger::fetch_bound::receiver_timeout;
  self->request(fetcher, bound, fetch_atom::value)
    .then(
      [=](byte_buffer& bytes) mutable {
        if (auto* m = metrics(self))
          m->fetches_in_flight->Decrement();
        count_fetch(self, fetch_outcome::ok);
        env.payload = std::move(bytes);
        on_ready(std::move(env));
      },
      [=](caf::error& err) mutable {
        if (auto* m = metrics(self))
          m->fetches_in_flight->Decrement();
        auto outcome = classify(err);
        count_fetch(self, outcome);
        on_failed(outcome, std::move(err), by);
      });
}

// -- receiving: the handler -----------------------------------------------------------

void count_call(messenger_ptr self, const std::string& name, bool known,
                const char* result) {
  if (auto* m = metrics(self))
    m->count_call(known ? name : "(unknown)", result);
}

caf::error unknown_handler(messenger_ptr self, const std::string& name) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>(self->state.p.worker_id));
  return make_error(errc::unknown_handler, "no handler '" + name
                                             + "' is bound on node " + id);
}

/// Runs the handler bound to env.handler; k gets its reply or its error.
template <class Continue>
void dispatch(messenger_ptr self, const messenger::handler& h, envelope env,
              deadline until, Continue k) {
  auto bound = call_bound(self, until);
  if (auto* a = std::get_if<caf::actor>(&h)) {
    self->request(*a, bound, handle_msg_atom::value, std::move(env))
      .then([=](envelope& reply) mutable { k(caf::expected<envelope>{std::move(reply)}); },
            [=](caf::error& err) mutable {
              k(caf::expected<envelope>{with_context(err, "the handler")});
            });
  } else if (auto* fn = std::get_if<messenger::unary_function_ptr>(&h)) {
    self->request(self->state.threads, bound, run_atom::value, *fn, std::move(env))
      .then([=](envelope& reply) mutable { k(caf::expected<envelope>{std::move(reply)}); },
            [=](caf::error& err) mutable {
              k(caf::expected<envelope>{with_context(err, "the handler")});
            });
  } else {
    k(caf::expected<envelope>{make_error(
      errc::invalid_argument,
      "handler '" + env.handler + "' is a stream handler: open a stream to it")});
  }
}

/// What a unary caller is told when its payload could not be fetched, or
/// none when it is told nothing (its own timer answers it).
std::optional<caf::error> refusal(fetch_outcome o, caf::error err,
                                  messenger::fetch_bound by, message_kind kind,
                                  std::chrono::milliseconds staged_fetch_timeout) {
  if (o == fetch_outcome::timeout) {
    if (messenger::on_expiry(by, kind) == messenger::expiry_action::drop_silently)
      return std::nullopt;
    return make_error(errc::timeout,
                      "the staged payload's fetch did not finish in time (this "
                      "node's staged_fetch_timeout is "
                        + std::to_string(staged_fetch_timeout.count()) + " ms)");
  }
  return err;
}

/// A received unary call or send, from taking its staging headers off to
/// the handler's reply (k gets it; none: no reply at all).
template <class Continue>
void handle_incoming(messenger_ptr self, envelope env, message_kind kind,
                     const caf::actor& caller, Continue k) {
  auto ref = messenger::take_staged(env.hdrs);
  auto name = env.handler;
  const auto* h = self->state.handlers.find(name);
  if (!ref.error.empty()) {
    count_call(self, name, h != nullptr, "error");
    { k(std::optional<caf::expected<envelope>>{
      caf::expected<envelope>{make_error(errc::protocol_violation, ref.error)}}); return; }
  }
  if (!h) {
    count_call(self, name, false, "unknown_handler");
    { k(std::optional<caf::expected<envelope>>{
      caf::expected<envelope>{unknown_handler(self, name)}}); return; }
  }
  // The caller's budget runs from here (the message left the queue).
  deadline until;
  if (ref.budget)
    until = clock_type::now() + *ref.budget;
  auto handler = *h;
  auto sft = self->state.p.cfg.staged_fetch_timeout;
  resolve(
    self, std::move(env), ref, kind,
    [=](envelope env) mutable {
      dispatch(self, handler, std::move(env), until,
               [=](caf::expected<envelope> reply) mutable {
                 count_call(self, name, true, reply ? "ok" : "error");
                 if (!reply || kind != message_kind::unary)
                   { k(std::optional<caf::expected<envelope>>{std::move(reply)}); return; }
                 reply->handler.clear();
                 prepare(self, caller, std::move(*reply), until,
                         [=](caf::expected<envelope> out) mutable {
                           k(std::optional<caf::expected<envelope>>{std::move(out)});
                         });
               });
    },
    [=](fetch_outcome o, caf::error err, messenger::fetch_bound by) mutable {
      count_call(self, name, true, "fetch_failed");
      auto told = refusal(o, std::move(err), by, kind, sft);
      if (!told)
        { k(std::optional<caf::expected<envelope>>{}); return; }
      k(std::optional<caf::expected<envelope>>{caf::expected<envelope>{*told}});
    });
}

// -- streams: the consumer's side -------------------------------------------------------

/// Answers the caller's pending next, if the inbox has something for it.
void serve(messenger_ptr self, uint64_t id) {
  auto i = self->state.inbound.find(id);
  if (i == self->state.inbound.end() || !i->second.waiting)
    return;
  auto& s = i->second;
  auto r = s.inbox.take();
  using st = messenger::stream_inbox::state;
  if (r.what == st::waiting)
    return;
  auto rp = std::move(*s.waiting);
  s.waiting.reset();
  if (r.grant > 0 && s.producer && s.producer_id != 0)
    self->send(caf::actor_cast<messenger_actor>(s.producer), wire_credit_atom::value,
               s.producer_id, r.grant);
  switch (r.what) {
    case st::item:
      rp.deliver(true, std::move(r.item));
      return;
    case st::finished:
      rp.deliver(false, envelope{});
      break;
    default:
      rp.deliver(make_error(errc::stream_ended, r.error));
  }
  self->state.inbound.erase(i);
  update_stream_gauge(self);
}

/// The stream fails (its caller learns at its next take) and, when asked,
/// its producer is told to stop.
void fail_inbound(messenger_ptr self, uint64_t id, const std::string& why,
                  bool stop_producer) {
  auto i = self->state.inbound.find(id);
  if (i == self->state.inbound.end())
    return;
  auto& s = i->second;
  if (stop_producer && s.producer && s.producer_id != 0)
    self->send(caf::actor_cast<messenger_actor>(s.producer), wire_stop_atom::value,
               s.producer_id, why);
  s.inbox.fail(why);
  serve(self, id);
}

void on_item(messenger_ptr self, uint64_t id, envelope item) {
  auto i = self->state.inbound.find(id);
  if (i == self->state.inbound.end())
    return; // cancelled or failed: the producer was told to stop
  auto& s = i->second;
  if (self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(s.producer))
    return; // not from this stream's producer
  auto slot = s.inbox.arrived();
  if (!slot)
    return fail_inbound(self, id, describe(slot.error()), true);
  auto ref = messenger::take_staged(item.hdrs);
  if (!ref.error.empty())
    return fail_inbound(self, id, ref.error, true);
  auto n = *slot;
  resolve(
    self, std::move(item), ref, message_kind::stream_item,
    [=](envelope ready) {
      auto i = self->state.inbound.find(id);
      if (i == self->state.inbound.end())
        return;
      i->second.inbox.ready(n, std::move(ready));
      serve(self, id);
    },
    [=](fetch_outcome o, caf::error err, messenger::fetch_bound) {
      // An item over the limit ends its own stream, naming both sizes, and
      // its producer stops; other streams go on.
      auto why = o == fetch_outcome::over_limit
                   ? "a stream item was refused: " + describe(err)
                   : "a stream item could not be fetched: " + describe(err);
      fail_inbound(self, id, why, true);
    });
}

// -- streams: the producer's side ---------------------------------------------------------

void end_outbound(messenger_ptr self, uint64_t id, const std::string& error) {
  auto i = self->state.outbound.find(id);
  if (i == self->state.outbound.end())
    return;
  self->send(caf::actor_cast<messenger_actor>(i->second.consumer), wire_end_atom::value,
             i->second.consumer_id, error);
  self->state.outbound.erase(i);
  update_stream_gauge(self);
}

/// Asks the source for the next item while the consumer has room.
void pump(messenger_ptr self, uint64_t id) {
  auto i = self->state.outbound.find(id);
  if (i == self->state.outbound.end())
    return;
  auto& s = i->second;
  if (!s.source || !s.credit.may_produce())
    return;
  s.credit.asking();
  self
    ->request(self->state.threads, call_bound(self, std::nullopt), next_atom::value,
              s.source)
    .then(
      [=](bool more, envelope& item) {
        auto i = self->state.outbound.find(id);
        if (i == self->state.outbound.end())
          return; // stopped meanwhile
        if (!more)
          return end_outbound(self, id, {});
        item.handler.clear();
        auto consumer = i->second.consumer;
        prepare(self, consumer, std::move(item), std::nullopt,
                [=](caf::expected<envelope> out) {
                  auto i = self->state.outbound.find(id);
                  if (i == self->state.outbound.end()) {
                    if (out) // stopped while it was staged: nobody will fetch it
                      unstage(self, staged_handle(*out));
                    return;
                  }
                  if (!out)
                    return end_outbound(self, id, describe(out.error()));
                  if (auto h = staged_handle(*out)) {
                    auto& staged = i->second.staged;
                    staged.push_back(*h);
                    while (staged.size() > 2 * size_t{i->second.credit.window()})
                      staged.pop_front();
                  }
                  self->send(caf::actor_cast<messenger_actor>(i->second.consumer),
                             wire_item_atom::value, i->second.consumer_id,
                             std::move(*out));
                  i->second.credit.produced();
                  pump(self, id);
                });
      },
      [=](caf::error& err) { end_outbound(self, id, describe(err)); });
}

/// A peer opens a stream from one of this node's stream handlers.
void open_outbound(messenger_ptr self, caf::typed_response_promise<uint64_t> rp,
                   messenger::stream_function_ptr fn, envelope request,
                   caf::actor consumer, uint64_t consumer_id, uint32_t window) {
  auto name = request.handler;
  self
    ->request(self->state.threads, call_bound(self, std::nullopt), open_atom::value,
              fn, std::move(request))
    .then(
      [=](messenger::item_source_ptr& source) mutable {
        count_call(self, name, true, "ok");
        auto id = self->state.next_stream++;
        auto [i, added] = self->state.outbound.emplace(
          id, outbound_stream{std::clamp<uint32_t>(window, 1, max_stream_window)});
        i->second.consumer = consumer;
        i->second.consumer_id = consumer_id;
        i->second.source = std::move(source);
        watch(self, consumer);
        update_stream_gauge(self);
        rp.deliver(id);
        pump(self, id);
      },
      [=](caf::error& err) mutable {
        count_call(self, name, true, "error");
        rp.deliver(with_context(err, "opening the stream"));
      });
}

// -- peers going down ---------------------------------------------------------------------

void on_down(messenger_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  st.handlers.forget_actor(dm.source);
  if (st.monitored.erase(dm.source) == 0)
    return;
  auto why = "the peer's messenger went down (" + to_string(dm.reason) + ")";
  for (auto i = st.calls.begin(); i != st.calls.end();) {
    if (i->second.peer == dm.source) {
      auto fail = std::move(i->second.fail);
      i = st.calls.erase(i);
      fail(make_error(errc::peer_down, why));
    } else {
      ++i;
    }
  }
  std::vector<uint64_t> failing;
  for (auto& [id, s] : st.inbound)
    if (s.producer.address() == dm.source)
      failing.push_back(id);
  for (auto id : failing)
    fail_inbound(self, id, why, false);
  for (auto i = st.outbound.begin(); i != st.outbound.end();) {
    if (i->second.consumer.address() == dm.source) {
      unstage_items(self, i->second);
      i = st.outbound.erase(i);
    } else {
      ++i;
    }
  }
  update_stream_gauge(self);
}

// -- the behaviour --------------------------------------------------------------------------

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

} // namespace

messenger_actor spawn_messenger(caf::actor_system& sys, messenger_params params) {
  return sys.spawn(messenger_behavior, std::move(params));
}

} // namespace ferry
