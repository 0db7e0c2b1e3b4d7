// owner_lookup: finds the owner actor of a worker id for the consumer side
// (a consumer, the consumer service). The peer directory answers in place;
// on a miss the gateway is asked, which also answers for this node itself
// and names the error for an unknown worker.
#pragma once

#include <cstdint>
#include <utility>

#include <caf/actor.hpp>
#include <caf/error.hpp>

#include "actors/rendezvous/consumer.hpp"
#include "protocol/atoms.hpp"

namespace ferry {

/// Calls on_owner(caf::actor owner, bool ucx_peer) or on_error(caf::error&),
/// at once on a directory hit, else when the gateway answers.
template <class Self, class OnOwner, class OnError>
void find_owner(Self* self, const consumer_context& ctx, uint64_t worker_id,
                OnOwner on_owner, OnError on_error) {
  if (ctx.peers)
    if (auto known = ctx.peers->find(worker_id))
      return on_owner(std::move(known->owner), known->ucx);
  self->request(ctx.directory, ctx.cfg.request_timeout, lookup_atom::value, worker_id)
    .then([=](caf::actor& owner, bool ucx_peer) mutable {
            on_owner(std::move(owner), ucx_peer);
          },
          [=](caf::error& err) mutable { on_error(err); });
}

} // namespace ferry
