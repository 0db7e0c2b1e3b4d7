// owner: serves the seven rendezvous calls over its slot_store, stages bytes,
// and chooses the path at each acquire (counting every refusal reason).
// The consumer drives a transfer; the owner only answers.
// Must never: crash or stall on a malformed body, or block its thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include <caf/fwd.hpp>

#include "actors/cluster/peer_directory.hpp"
#include "actors/rdma/arena_pool_actor.hpp"
#include "actors/rdma/ucx_engine.hpp"
#include "actors/rendezvous/owner_interface.hpp"

namespace ferry {

struct owner_metrics;
struct rdma_metrics;

/// What the owner's RDMA path uses; all empty on a node without UCX.
struct owner_rdma_links {
  arena_pool_actor pool;
  ucx_engine_ref engine;
  rdma_metrics* metrics = nullptr;
  // Copies bytes into registered memory off the owner's thread
  // (actors/rendezvous/bulk_copier.hpp); empty: copies run inline.
  caf::actor copier;
  // The registered peers (the gateway writes it): the rendezvous calls of
  // any other remote node are refused with not_registered, so descriptors,
  // keys and bytes reach registered peers only. Null: no check (tests).
  std::shared_ptr<const peer_directory> peers;
};

struct owner_config {
  uint64_t chunk_size = 512 * 1024;                 // DEFAULT_CHUNK_SIZE
  std::chrono::milliseconds sweep_period{100};      // chunked leases and TTLs
  bool rdma_configured = false;                     // an RDMA registry exists
  bool rdma_enabled = true;                         // the kill switch is off
  uint64_t rdma_min_bytes = 64 * 1024;              // smaller pinned slots answer chunked
  // The largest payload an eager acquire's answer carries (0: none); a
  // consumer's own eager_max may lower it.
  uint64_t eager_max = 16 * 1024;
  // A transparently staged payload (register_pinned without may_map) of at
  // least this many bytes is registered where it lies (no copy into an
  // arena); 0: always copied. The node sets it only where registering
  // memory pins nothing (ucx_context::registers_without_pinning).
  uint64_t register_in_place_min = 0;
  std::chrono::milliseconds lease_timeout{30000};   // RDMA lease deadline
  // The quarantine of blocks a peer's GET may still read (rdma_quarantine.hpp):
  // a failed fence goes again after fence_retry; a peer that went away is
  // cleared after_down later; a block goes at the latest after max_hold,
  // the endpoints to its peers closed first.
  std::chrono::milliseconds quarantine_fence_retry{1000};
  std::chrono::milliseconds quarantine_after_down{1000};
  std::chrono::milliseconds quarantine_max_hold{60000};
  std::chrono::milliseconds request_timeout{10000}; // bound on its own requests
  std::chrono::milliseconds transfer_timeout{300000}; // bound on a bulk copy
  // Test hook: corrupt each descriptor ("unknown_backend", "truncated",
  // "trailing_byte", "lying_key_length"). Only in FERRY_TEST_HOOKS builds.
  std::string test_descriptor_fault;
  // Test hook: pulls of this chunk index and later are never answered, so a
  // test can kill the owner mid-transfer. Only honoured in FERRY_TEST_HOOKS builds.
  uint64_t stall_pulls_from = std::numeric_limits<uint64_t>::max();
};

owner_actor spawn_owner(caf::actor_system& sys, uint64_t worker_id,
                        owner_config cfg, owner_metrics* metrics,
                        owner_rdma_links rdma = {});

} // namespace ferry
