// An envelope leaving this messenger: its bounds checked, its payload
// staged on the owner when it is above the threshold and leaves the node
// (addressed to the target's node, so the copy goes when that node does),
// and the staged copies dropped when nobody will fetch them.
#include "actors/messenger/messenger_state.hpp"

#include <prometheus/counter.h>

#include "actors/messenger/messenger_metrics.hpp"
#include "protocol/errors.hpp"

namespace ferry::messenger_impl {

/// elsewhere, checks its bounds, and stages its payload when it is above
/// the threshold and leaves this node. Calls k with the envelope to send.
void prepare(messenger_ptr self, const caf::actor& target, envelope env,
             deadline until, envelope_continuation k) {
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
        // Only `target`'s node will fetch it: if that node goes away, the
        // owner drops the copy then, not at its time-to-live.
        self->send(self->state.p.owner, address_to_atom::value, h, target);
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

} // namespace ferry::messenger_impl
