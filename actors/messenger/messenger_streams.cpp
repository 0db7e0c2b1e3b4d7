// Streams through this messenger: the consumer's side (the inbox its
// caller takes from, credit granted back) and the producer's side (the
// source pumped while the consumer has room, items staged like any payload).
#include "actors/messenger/messenger_state.hpp"

#include <algorithm>

#include "protocol/errors.hpp"

namespace ferry::messenger_impl {

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

namespace {

void end_outbound(messenger_ptr self, uint64_t id, const std::string& error) {
  auto i = self->state.outbound.find(id);
  if (i == self->state.outbound.end())
    return;
  self->send(caf::actor_cast<messenger_actor>(i->second.consumer), wire_end_atom::value,
             i->second.consumer_id, error);
  self->state.outbound.erase(i);
  update_stream_gauge(self);
}

} // namespace

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

} // namespace ferry::messenger_impl
