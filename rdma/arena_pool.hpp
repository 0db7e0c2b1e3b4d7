// arena_pool: pre-registered arenas and the sub-allocation inside them.
// A plain data structure, not thread-safe: the arena pool actor owns it.
//
// - A block shares its arena's mapping: an arena unmaps when the pool let
//   go of it and its last block is gone.
// - Pooled arenas start at initial_arena_bytes and grow geometrically up to
//   max_arena_bytes; inside each, an offset_allocator hands out 4 KiB granules.
// - A request of dedicated_arena_min or more gets its own arena, unmapped as
//   soon as its block is freed.
// - Every mapping is charged to the registered_budget first (whole pages);
//   over the budget the pool refuses with `budget`, a failed map or a pool
//   that may not grow refuses with `pool_exhausted`.
// - Empty pooled arenas are unmapped by reclaim() only when reclaim_after is
//   set, newest first, keeping retain_arena_bytes mapped; between one and two
//   reclaim_after after they emptied when the sweep runs every
//   reclaim_period(), which its owner arms only while reclaimable().
// Must never: unmap an arena that still has a block out, or hand out
// overlapping blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "rdma/offset_allocator.hpp"
#include "rdma/registered_budget.hpp"

namespace ferry {

/// One registration as the pool sees it; the UCX one wraps ucx_memory, tests
/// use a fake.
class mapped_region {
public:
  virtual ~mapped_region() = default;
  virtual char* data() const = 0;
  virtual uint64_t size() const = 0;
  virtual uint64_t address() const = 0;
  virtual const std::vector<uint8_t>& rkey() const = 0;
  /// What the backend pinned (whole pages, possibly more than size()).
  virtual uint64_t pinned_bytes() const = 0;
};

/// Maps `bytes` fresh bytes, or says why not.
using region_mapper
  = std::function<std::variant<std::unique_ptr<mapped_region>, std::string>(uint64_t)>;

struct arena_pool_config {
  uint64_t initial_arena_bytes = 64ull << 20;
  uint64_t max_arena_bytes = 1ull << 30;
  uint64_t dedicated_arena_min = 64ull << 20;
  std::optional<std::chrono::milliseconds> reclaim_after;
  uint64_t retain_arena_bytes = 64ull << 20;
  // The RDMA lease timeout: the reclaim sweep runs at least every half of it.
  std::chrono::milliseconds lease_timeout{30000};
  static constexpr uint64_t granule = 4096;
};

enum class pool_refusal { budget, pool_exhausted };

/// Whole granules covering `bytes`, without wrapping near 2^64 (a size from
/// a peer can be anything): ceil(bytes / granule) exactly.
constexpr uint64_t granules_for(uint64_t bytes) noexcept {
  return bytes / arena_pool_config::granule + (bytes % arena_pool_config::granule != 0);
}

const char* to_string(pool_refusal r);

/// A block handed out: where it is and the token that frees it.
struct pool_grant {
  uint32_t arena_id = 0;
  offset_allocator::allocation token;
  char* data = nullptr;
  uint64_t size = 0;
  uint64_t address = 0;
  std::shared_ptr<const std::vector<uint8_t>> rkey;
  uint64_t generation = 0;
  // The arena's mapping: a block keeps it mapped (a block its caller holds
  // past the pool's end, a node's stop, stays readable; the pool drops its
  // own share when it unmaps the arena).
  std::shared_ptr<const mapped_region> mapping;
};

class arena_pool {
public:
  using clock_type = std::chrono::steady_clock;

  arena_pool(arena_pool_config cfg, region_mapper mapper,
             registered_budget& budget);

  /// A block of at least `bytes` (> 0). `may_map` false: only arenas
  /// already mapped serve (transparent staging never maps).
  std::variant<pool_grant, pool_refusal> allocate(uint64_t bytes, bool may_map);

  /// Returns a block; unmaps its arena at once when it is dedicated.
  void free(uint32_t arena_id, offset_allocator::allocation token,
            clock_type::time_point now = clock_type::now());

  /// Unmaps empty pooled arenas past reclaim_after; returns how many.
  size_t reclaim(clock_type::time_point now);
  /// True when reclaim() could unmap something now or later without a new
  /// free (an empty pooled arena above the warm floor, reclaim_after set):
  /// the sweep is armed only then.
  bool reclaimable() const;
  /// The sweep period: the smaller of half the lease timeout and half
  /// reclaim_after, at least 10 ms.
  std::chrono::milliseconds reclaim_period() const;

  /// Unmaps every arena (a node's stop); a block still held keeps its
  /// arena's mapping until it goes. Returns how many.
  size_t unmap_all();

  /// True when [address, address + len) lies inside one live block.
  bool covers(uint64_t address, uint64_t len) const;

  uint64_t registered_bytes() const;
  /// Bytes the arenas map, and the part of them granted out as blocks
  /// (whole granules): ferry_rdma_arena_utilization_ratio is their ratio.
  uint64_t mapped_bytes() const;
  uint64_t granted_bytes() const;
  size_t arena_count() const { return arenas_.size(); }
  size_t live_blocks() const;
  /// One arena as `ferry stat` shows it.
  struct arena_view {
    uint32_t id = 0;
    uint64_t bytes = 0;
    bool dedicated = false;
    size_t blocks = 0;
    // How long it has been empty; none while it has blocks.
    std::optional<std::chrono::milliseconds> empty_for;
  };
  std::vector<arena_view> arenas(clock_type::time_point now) const;
  /// Registrations made so far (for ferry_rdma_registrations_total).
  uint64_t registrations() const { return registrations_; }
  const arena_pool_config& config() const { return cfg_; }

private:
  struct arena {
    std::shared_ptr<const mapped_region> region; // shared with its blocks
    offset_allocator alloc;
    std::shared_ptr<const std::vector<uint8_t>> rkey;
    uint64_t generation = 0;
    uint64_t charged = 0; // bytes charged to the budget
    bool dedicated = false;
    std::map<uint32_t, uint32_t> blocks; // offset -> granules (for covers)
    std::optional<clock_type::time_point> empty_since;
  };

  std::optional<uint32_t> map_arena(uint64_t bytes, bool dedicated,
                                    pool_refusal& why);
  std::optional<pool_grant> carve(uint32_t id, uint32_t granules);
  uint64_t next_pooled_size(uint64_t at_least) const;
  void unmap(uint32_t id);

  arena_pool_config cfg_;
  region_mapper mapper_;
  registered_budget* budget_;
  std::map<uint32_t, arena> arenas_; // by id, ascending = oldest first
  uint32_t next_id_ = 1;
  uint64_t next_generation_ = 1;
  uint64_t registrations_ = 0;
  uint64_t last_pooled_size_ = 0;
};

} // namespace ferry
