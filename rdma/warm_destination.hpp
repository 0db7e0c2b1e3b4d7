// warm_destination: the consumer side's one warm GET destination. A GET of
// dedicated_arena_min (64 MiB) or more lands in a dedicated arena, which the
// pool unmaps as soon as the block is freed; the next GET then maps a fresh
// one and faults in every destination page again (~20 us a page on PVM
// guests: ~0.3-0.6 s for 64 MiB, measured). This holder keeps the most
// recent large destination block, after its bytes were copied out, so the
// next GET of about the same size reuses its already-faulted pages.
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
  uint64_t min_bytes = 64ull << 20;  // smaller blocks live in pooled arenas,
                                     // which stay mapped (and warm) anyway
  uint64_t max_bytes = 256ull << 20; // a quarter of the default 1 GiB budget
  std::chrono::milliseconds idle{2000};
};

struct warm_destination_stats {
  uint64_t kept = 0;    // blocks given back and kept
  uint64_t reused = 0;  // GETs that took the kept block
  uint64_t dropped = 0; // kept blocks released (misfit, idle, replaced)
  uint64_t held_bytes = 0;
};

class warm_destination {
public:
  using clock_type = std::chrono::steady_clock;

  explicit warm_destination(warm_destination_config cfg = {}) : cfg_(cfg) {}

  /// For a GET of `len` bytes: the kept block when it fits (len <= size and
  /// len > size / 2), else null. A large GET (len >= min_bytes) that the
  /// kept block does not fit drops it, so the fresh allocation can use its
  /// budget.
  pinned_ptr take(uint64_t len) {
    pinned_ptr out;
    pinned_ptr drop;
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (!block_ || len < cfg_.min_bytes)
        return nullptr;
      if (len <= block_->size() && len > block_->size() / 2) {
        out = std::move(block_);
        ++stats_.reused;
      } else {
        drop = std::move(block_);
        ++stats_.dropped;
      }
      block_.reset();
    }
    return out; // `drop` goes back to the pool outside the lock
  }

  /// Keeps `block` (a destination whose GET completed and whose bytes were
  /// copied out) when min_bytes <= size <= max_bytes; a kept block it
  /// replaces is dropped. Other blocks are simply released.
  void keep(pinned_ptr block, clock_type::time_point now = clock_type::now()) {
    if (!block || block->size() < cfg_.min_bytes || block->size() > cfg_.max_bytes)
      return;
    pinned_ptr drop;
    {
      std::lock_guard<std::mutex> lock{mu_};
      drop = std::move(block_);
      if (drop)
        ++stats_.dropped;
      block_ = std::move(block);
      since_ = now;
      ++stats_.kept;
    }
  }

  /// Drops the kept block when it sat unused for `idle`; true if dropped.
  bool expire(clock_type::time_point now = clock_type::now()) {
    pinned_ptr drop;
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (!block_ || now - since_ < cfg_.idle)
        return false;
      drop = std::move(block_);
      block_.reset();
      ++stats_.dropped;
    }
    return true;
  }

  /// Drops the kept block (shutdown).
  void clear() {
    pinned_ptr drop;
    std::lock_guard<std::mutex> lock{mu_};
    drop = std::move(block_);
    block_.reset();
  }

  warm_destination_stats stats() const {
    std::lock_guard<std::mutex> lock{mu_};
    auto s = stats_;
    s.held_bytes = block_ ? block_->size() : 0;
    return s;
  }

  const warm_destination_config& config() const { return cfg_; }

private:
  warm_destination_config cfg_;
  mutable std::mutex mu_;
  pinned_ptr block_;
  clock_type::time_point since_{};
  warm_destination_stats stats_;
};

} // namespace ferry
