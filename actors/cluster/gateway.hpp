// gateway: a node's published front door. It keeps the peer directory
// (worker id -> hello, the peer's gateway monitored), answers hellos, tells
// its listening members of each new one (membership: every node learns of
// every other) and lists them to a joining node, resolves
// a worker id to its owner, spawns registered worker types on request, and
// adopts payloads (pull from their owner, stage here).
// Workers it spawned are stopped when it stops.
// Must never: block, or keep a peer whose gateway went down.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/cluster/gateway_interface.hpp"
#include "actors/cluster/peer_directory.hpp"
#include "actors/node_context.hpp"
#include "actors/rdma/ucx_engine.hpp"

namespace ferry {

struct rdma_metrics;

struct gateway_params {
  peer_hello identity;                        // this node; actor fields unset
  std::shared_ptr<const node_context> node;   // filled before the node publishes
  worker_registry workers;
  ucx_engine_ref engine; // peers with a UCX address are registered here
  // GETs also with peers whose pair reads only by UCX's emulation (tcp):
  // --rdma-emulated-gets. Off, the directory says no GETs for them.
  bool emulated_gets = false;
  // Mirrors the peer table for consumers (optional; the gateway writes it).
  std::shared_ptr<peer_directory> directory;
  // The port the node listens on, known only once it has published.
  std::shared_ptr<std::atomic<uint16_t>> port
    = std::make_shared<std::atomic<uint16_t>>(0);
  // The membership actor (actors/cluster/membership.hpp): told of members that
  // registered or left, and of members peers push (optional).
  caf::actor membership;
  // ferry_control_channel{channel} (optional).
  rdma_metrics* metrics = nullptr;
  // The staging layer's state for `ferry stat` (JSON text; empty: none).
  std::function<std::string()> staging_status;
  // The staging source (actors/staging/staging_source.hpp) peers' remote
  // staging sessions Pin (optional).
  caf::actor staging_source;
};

gateway_actor spawn_gateway(caf::actor_system& sys, gateway_params params);

} // namespace ferry
