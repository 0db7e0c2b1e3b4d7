// A message arriving at this messenger: its staged payload fetched (a
// staged_fetch within the limit its kind and budget give), its handler run
// (an actor, or a function on the handler threads) and the reply readied.
#include "actors/messenger/messenger_state.hpp"

#include <algorithm>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "actors/messenger/messenger_metrics.hpp"
#include "actors/messenger/staged_fetch.hpp"
#include "protocol/errors.hpp"

namespace ferry::messenger_impl {

namespace {

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

} // namespace

/// Fetches the payload `ref` names into `env`, within the limit its kind
/// and budget give. Calls on_ready(envelope) or on_failed(outcome, error,
/// bound that ended it).
void resolve(messenger_ptr self, envelope env, const messenger::staged_ref& ref,
             message_kind kind, fetched_continuation on_ready,
             fetch_failed_continuation on_failed) {
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

/// Runs the handler bound to env.handler; k gets its reply or its error.
void dispatch(messenger_ptr self, const messenger::handler& h, envelope env,
              deadline until, envelope_continuation k) {
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
void handle_incoming(messenger_ptr self, envelope env, message_kind kind,
                     const caf::actor& caller, reply_continuation k) {
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

} // namespace ferry::messenger_impl
