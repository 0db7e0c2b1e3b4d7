#include "actors/messenger/messenger_state.hpp"

#include <algorithm>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "actors/messenger/messenger_metrics.hpp"
#include "protocol/errors.hpp"
#include "protocol/hex64.hpp"

namespace ferry::messenger_impl {

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
  return make_error(errc::unknown_owner, "node " + hex64(node)
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

void count_call(messenger_ptr self, const std::string& name, bool known,
                const char* result) {
  if (auto* m = metrics(self))
    m->count_call(known ? name : "(unknown)", result);
}

caf::error unknown_handler(messenger_ptr self, const std::string& name) {
  return make_error(errc::unknown_handler, "no handler '" + name
                                             + "' is bound on node "
                                             + hex64(self->state.p.worker_id));
}

} // namespace ferry::messenger_impl
