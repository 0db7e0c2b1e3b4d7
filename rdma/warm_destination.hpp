// warm_destination: the consumer side's one warm GET destination. A GET of
// dedicated_arena_min (64 MiB) or more lands in a dedicated arena, which the
// pool unmaps as soon as the block is freed; the next GET then maps a fresh
// one and faults in every destination page again (~20 us a page on PVM
// guests: ~0.3-0.6 s for 64 MiB, measured). This holder keeps the most
// recent large destination block, after its bytes were copied out, so the
// next GET of about the same size reuses its already-faulted pages.
// A second slot does the same for small GETs (up to small_max_bytes): their
// destinations come from warm pooled arenas anyway, but asking the arena
// pool actor (its own thread) for one costs a thread handoff each way, a
// large part of a small GET's latency; the kept small block skips it.
//
// Why this does not break the pool's rule that an empty dedicated arena is
// unmapped at once: that rule protects the owner's staging budget from
// arenas nobody will use again. A kept destination is a live block, charged
// to the budget like any other, that no peer holds a descriptor for (the
// consumer never exports its destinations), so keeping it creates no stale
// key. It is bounded: one block, at most max_bytes, dropped when idle for
// `idle` (a timer on an object no peer can reference, as the spec allows),
// and dropped whenever a large GET of a size it does not fit asks for one,
// so it never holds budget that such a GET's fresh allocation needs.
// Thread-safe: consumers take and keep on CAF's threads, the UCX engine's
// thread expires it.
// Must never: hand the same block to two GETs, or keep a block that anyone
// may still write (a GET's destination is kept only after UCX completed).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "rdma/pinned_block.hpp"

namespace ferry {

struct warm_destination_config {
  uint64_t min_bytes = 64ull << 20;  // the large slot: blocks of at least this
  uint64_t max_bytes = 256ull << 20; // a quarter of the default 1 GiB budget
  uint64_t small_max_bytes = 512ull << 10; // the small slot: blocks up to this
  std::chrono::milliseconds idle{2000};
};

struct warm_destination_stats {
  uint64_t kept = 0;    // blocks given back and kept
  uint64_t reused = 0;  // GETs that took a kept block
  uint64_t dropped = 0; // kept blocks released (misfit, idle, replaced)
  uint64_t held_bytes = 0;
};

class warm_destination {
public:
  using clock_type = std::chrono::steady_clock;

  explicit warm_destination(warm_destination_config cfg = {}) : cfg_(cfg) {}

  /// For a GET of `len` bytes: a kept block when one fits (len <= size and
  /// len > size / 2), else null. A large GET (len >= min_bytes) that the
  /// large block does not fit drops it, so the fresh allocation can use its
  /// budget; a small misfit leaves the small block alone.
  pinned_ptr take(uint64_t len) {
    pinned_ptr out;
    pinned_ptr drop; // goes back to the pool outside the lock
    std::lock_guard<std::mutex> lock{mu_};
    auto* slot = slot_for_get(len);
    if (!slot || !slot->block)
      return nullptr;
    auto size = slot->block->size();
    if (len <= size && len > size / 2) {
      out = std::move(slot->block);
      ++stats_.reused;
    } else if (slot == &large_) {
      drop = std::move(slot->block);
      ++stats_.dropped;
    }
    return out;
  }

  /// Keeps `block` (a destination whose GET completed and whose bytes were
  /// copied out) in the slot of its size class; a block it replaces is
  /// dropped. Blocks of no class are simply released.
  void keep(pinned_ptr block, clock_type::time_point now = clock_type::now()) {
    if (!block)
      return;
    pinned_ptr drop;
    std::lock_guard<std::mutex> lock{mu_};
    auto* slot = slot_for_block(block->size());
    if (!slot)
      return;
    drop = std::move(slot->block);
    if (drop)
      ++stats_.dropped;
    slot->block = std::move(block);
    slot->since = now;
    ++stats_.kept;
  }

  /// Drops kept blocks that sat unused for `idle`; true if any was dropped.
  bool expire(clock_type::time_point now = clock_type::now()) {
    pinned_ptr drop_small;
    pinned_ptr drop_large;
    std::lock_guard<std::mutex> lock{mu_};
    drop_small = expire_slot(small_, now);
    drop_large = expire_slot(large_, now);
    return drop_small || drop_large;
  }

  /// Drops the kept blocks (shutdown).
  void clear() {
    pinned_ptr drop_small;
    pinned_ptr drop_large;
    std::lock_guard<std::mutex> lock{mu_};
    drop_small = std::move(small_.block);
    drop_large = std::move(large_.block);
  }

  warm_destination_stats stats() const {
    std::lock_guard<std::mutex> lock{mu_};
    auto s = stats_;
    s.held_bytes = (small_.block ? small_.block->size() : 0)
                   + (large_.block ? large_.block->size() : 0);
    return s;
  }

  const warm_destination_config& config() const { return cfg_; }

private:
  struct slot {
    pinned_ptr block;
    clock_type::time_point since{};
  };

  slot* slot_for_get(uint64_t len) {
    if (len >= cfg_.min_bytes)
      return &large_;
    if (len <= cfg_.small_max_bytes)
      return &small_;
    return nullptr;
  }

  slot* slot_for_block(uint64_t size) {
    if (size >= cfg_.min_bytes && size <= cfg_.max_bytes)
      return &large_;
    if (size <= cfg_.small_max_bytes)
      return &small_;
    return nullptr;
  }

  pinned_ptr expire_slot(slot& s, clock_type::time_point now) {
    if (!s.block || now - s.since < cfg_.idle)
      return nullptr;
    ++stats_.dropped;
    return std::move(s.block);
  }

  warm_destination_config cfg_;
  mutable std::mutex mu_;
  slot small_;
  slot large_;
  warm_destination_stats stats_;
};

} // namespace ferry
