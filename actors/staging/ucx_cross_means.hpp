// ucx_cross_means: what a node lends remote staging for the CROSS over one
// UCX GET (docs/remote-staging.md): its arena pool (the slots' private
// registrations) and its UCX engine (the GETs). Without them, or with
// --staging-cross caf, every CROSS goes by CAF requests.
#pragma once

#include "actors/rdma/arena_pool_actor.hpp"
#include "actors/rdma/ucx_engine.hpp"

namespace ferry {

struct ucx_cross_means {
  arena_pool_actor pool;
  ucx_engine_ref engine;
  bool enabled = false; // --staging-cross auto
  explicit operator bool() const { return enabled && pool && engine; }
};

} // namespace ferry
