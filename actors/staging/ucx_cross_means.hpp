// ucx_cross_means: what a node lends remote staging for the CROSS over one
// UCX GET (docs/remote-staging.md): its arena pool (the slots' private
// registrations), its UCX engine (the GETs) and its peer directory (which
// worker lives on which node, and whether the engine knows it: a session
// GETs only from the peer it talks to). Without them, or with
// --staging-cross caf, every CROSS goes by CAF requests.
#pragma once

#include <cstdint>
#include <memory>

#include <caf/node_id.hpp>

#include "actors/cluster/peer_directory.hpp"
#include "actors/rdma/arena_pool_actor.hpp"
#include "actors/rdma/ucx_engine.hpp"

namespace ferry {

struct ucx_cross_means {
  arena_pool_actor pool;
  ucx_engine_ref engine;
  std::shared_ptr<const peer_directory> peers;
  bool enabled = false; // --staging-cross auto
  explicit operator bool() const { return enabled && pool && engine && peers; }

  /// True when `worker` is the registered peer on `node` and a GET with it
  /// can go (this node's engine knows it, and the pair reads one-sided or
  /// emulated GETs are allowed: the directory's ucx_gets).
  bool reaches(uint64_t worker, const caf::node_id& node) const {
    auto known = peers ? peers->find_node(node) : std::nullopt;
    return known && known->first == worker && known->second.ucx_gets;
  }
};

} // namespace ferry
