// arena_pool_actor: owns the node's arena pool and registered-bytes budget
// and lends pinned blocks. It runs detached: mapping an arena can take
// milliseconds (UCX touches every page over posix), which must not stall the
// cooperative scheduler (tests with fake mappings may keep it on the
// scheduler: own_thread false). A block returns itself to the pool when its last
// holder drops it (a pool_free message), so the owner, a consumer or a GET in
// flight can hold one without knowing the pool.
// It also registers caller-owned memory (external regions) under the same
// registered-bytes budget, and unregisters it: gate, wait for the region's
// anchors (bounded), latch the copy gate, unmap, resolve the release signal.
// drain is the shutdown sweep: refuse new allocations and registrations,
// drain and unregister every region; arenas are unmapped when the actor ends.
// Must never: map from a caller that asked not to (transparent staging), or
// resolve a region's release before its unmap.
#pragma once

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/rdma/rdma_types.hpp"
#include "protocol/atoms.hpp"
#include "rdma/arena_pool.hpp"
#include "rdma/region_registry.hpp"

namespace ferry {

struct rdma_metrics;

using arena_pool_actor = caf::typed_actor<
  // A block of at least `bytes`; `may_map` false uses mapped arenas only.
  // Errors: errc::budget_exhausted, errc::pool_exhausted.
  caf::replies_to<pool_alloc_atom, uint64_t, bool>::with<pinned_ptr>,
  caf::reacts_to<pool_free_atom, uint32_t, uint32_t, uint32_t>,
  caf::reacts_to<tick_atom>,
  // Maps an external region (charged to the budget); answers its id.
  // Errors: errc::budget_exhausted, errc::draining, errc::invalid_argument.
  caf::replies_to<region_register_atom, external_region_ptr>::with<uint64_t>,
  // Unregisters within `timeout_ms`; the region's release signal answers.
  caf::reacts_to<region_unregister_atom, external_region_ptr, uint64_t>,
  // The shutdown sweep within `timeout_ms`; true when every region drained.
  caf::replies_to<drain_atom, uint64_t>::with<bool>,
  caf::reacts_to<poll_atom>,
  // The last step of a node's stop (after the drain): every arena is
  // unmapped (a block still held keeps its mapping until it goes); answers
  // the registered bytes still charged.
  caf::replies_to<pool_unmap_all_atom>::with<uint64_t>,
  caf::replies_to<stat_atom>::with<std::string>>;

arena_pool_actor spawn_arena_pool(caf::actor_system& sys, arena_pool_config cfg,
                                  region_mapper mapper, uint64_t budget_bytes,
                                  rdma_metrics* metrics,
                                  external_mapper external = {},
                                  bool own_thread = true);

} // namespace ferry
