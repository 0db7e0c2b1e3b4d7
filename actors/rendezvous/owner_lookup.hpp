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
#include "actors/rendezvous/owner_route.hpp"
#include "protocol/atoms.hpp"

namespace ferry {

/// A route by CAF requests to `owner`, worker_id's owner actor. Its calls
/// count under ferry_control_calls_total, unless that owner is this node's
/// own: a local call goes by neither channel between nodes.
inline owner_route caf_route(const consumer_context& ctx, caf::actor owner,
                             uint64_t worker_id) {
  return owner_route{caf::actor_cast<owner_actor>(std::move(owner)), {}, worker_id,
                     worker_id == ctx.node_id ? nullptr : ctx.rdma};
}

/// Calls on_owner(owner_route route, bool ucx_peer) or on_error(caf::error&),
/// ucx_peer true when GETs from that owner may go (the directory's ucx_gets),
/// at once on a directory hit, else when the gateway answers. The route
/// takes the control channel when the directory says the peer's calls go
/// by it; a gateway's answer (this node, or a peer not in the directory)
/// routes CAF requests.
template <class Self, class OnOwner, class OnError>
void find_owner(Self* self, const consumer_context& ctx, uint64_t worker_id,
                OnOwner on_owner, OnError on_error) {
  auto route = [&ctx, worker_id](caf::actor owner, bool control_am) {
    auto r = caf_route(ctx, std::move(owner), worker_id);
    if (control_am && ctx.channel)
      r.channel = ctx.channel;
    return r;
  };
  if (ctx.peers)
    if (auto known = ctx.peers->find(worker_id))
      return on_owner(route(std::move(known->owner), known->control_am), known->ucx_gets);
  auto by_caf = caf_route(ctx, {}, worker_id); // its owner named by the answer
  self->request(ctx.directory, ctx.cfg.request_timeout, lookup_atom::value, worker_id)
    .then([=](caf::actor& owner, bool ucx_peer) mutable {
            by_caf.owner = caf::actor_cast<owner_actor>(std::move(owner));
            on_owner(by_caf, ucx_peer);
          },
          [=](caf::error& err) mutable { on_error(err); });
}

} // namespace ferry
