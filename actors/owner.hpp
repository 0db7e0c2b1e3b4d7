// owner: serves the seven rendezvous calls over its slot_store, stages bytes,
// and chooses the path at each acquire (counting every refusal reason).
// The consumer drives a transfer; the owner only answers.
// Must never: crash or stall on a malformed body, or block its thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

#include <caf/fwd.hpp>

#include "actors/owner_interface.hpp"

namespace ferry {

struct owner_metrics;

struct owner_config {
  uint64_t chunk_size = 512 * 1024;                 // DEFAULT_CHUNK_SIZE
  std::chrono::milliseconds sweep_period{100};      // chunked leases and TTLs
  bool rdma_configured = false;                     // an RDMA registry exists
  bool rdma_enabled = true;                         // the kill switch is off
  // Test hook: pulls of this chunk index and later are never answered, so a
  // test can kill the owner mid-transfer. Only honoured in FERRY_TEST_HOOKS builds.
  uint64_t stall_pulls_from = std::numeric_limits<uint64_t>::max();
};

owner_actor spawn_owner(caf::actor_system& sys, uint64_t worker_id,
                        owner_config cfg, owner_metrics* metrics);

} // namespace ferry
