// membership: the actor that keeps this node connected to every member of
// its cluster (a thin shell around member_table).
// Owns: dialling. It dials the join targets (--join, retried with backoff
// until reached, and again whenever their member is gone), introduces
// itself to each (the hello), has the local gateway register the answer,
// pulls the member's own member list and dials whoever it does not know.
// A member that left is dialled again: a join target until reached, any
// other for about 20 s (a cut connection between two live members heals).
// The gateway tells it of members that registered or left, and passes on
// members that peers push to it. `ready` turns true once every join target
// was reached (the /readyz endpoint reads it).
// Must never: block (every dial is a chain of bounded requests), or dial
// an endpoint a peer named without bounds on its count and length.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/io/middleman_actor.hpp>

#include "protocol/peer_hello.hpp"

namespace ferry {

struct membership_params {
  std::vector<std::string> join;          // HOST:PORT of members to join by
  std::function<peer_hello()> own_hello;  // this node's hello (port known)
  caf::io::middleman_actor connector;     // the middleman: plain or TLS
  caf::actor prober; // actors/cluster/tcp_probe.hpp: an address answers before CAF dials it
  std::set<std::string> gateway_signature; // what a dialled gateway must be
  std::chrono::milliseconds request_timeout{10000};
  std::shared_ptr<std::atomic<bool>> ready = std::make_shared<std::atomic<bool>>(false);
};

/// Messages (all local): (join_atom, gateway_actor, self endpoint) starts
/// it; (member_atom, endpoint) a member learned of; (peer_joined_atom,
/// worker id, endpoint) and (peer_down_atom, worker id) from the gateway.
caf::actor spawn_membership(caf::actor_system& sys, membership_params params);

} // namespace ferry
