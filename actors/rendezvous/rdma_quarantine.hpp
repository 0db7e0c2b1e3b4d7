// rdma_quarantine: registered blocks that a peer's GET may still read after
// the lease that exported them ended, kept out of the pool until no such
// GET can be served from them any more.
//
// The problem: a consumer that gives up on a GET (its deadline, its caller
// gone) detaches its lease, and the reaper ends the lease of a consumer that
// went silent; either way the GET's request may still be on its way, or
// queued in the owner's UCX worker, which serves an emulated GET (tcp) by
// reading the block's memory whenever it gets to it. Freed at once, the
// block could by then hold another payload (whose bytes the GET would read)
// or, for a caller's region, be unmapped (the owner would crash).
//
// Rules:
// - A block enters with the holders (nodes) whose GETs may still read it.
// - A holder is cleared by a fence: the holder's UCX engine answers once
//   every GET it had posted to this owner when the fence arrived has ended,
//   so a fence sent after a block entered clears that block. One fence per
//   holder is in flight at a time; one that fails is sent again after
//   fence_retry.
// - A holder that went away is cleared after_down later: what it had sent
//   is in this owner's socket by then and served meanwhile.
// - A block goes back to the pool when every holder is cleared. One that
//   waited max_hold goes anyway, forced: handed out with its holders so the
//   owner's engine closes its endpoints to them before the block goes (a
//   request that arrives on a closed endpoint is dropped by UCX).
// A plain structure: no actors, no clock of its own (every call takes now).
// Must never: let a block go while a holder that may read it is uncleared,
// except forced after max_hold; or hold one past max_hold.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "rdma/pinned_block.hpp"

namespace ferry {

class rdma_quarantine {
public:
  using clock_type = std::chrono::steady_clock;
  using time_point = clock_type::time_point;
  using duration = clock_type::duration;

  struct config {
    duration fence_retry = std::chrono::seconds{1};
    duration after_down = std::chrono::seconds{1};
    duration max_hold = std::chrono::seconds{60};
  };

  /// A block that waited max_hold: the caller closes the endpoints to its
  /// holders, then lets it go.
  struct forced_block {
    pinned_ptr block;
    uint64_t bytes = 0;
    std::vector<uint64_t> holders;
  };

  /// What collect() let go, by what cleared it.
  struct released {
    uint64_t by_fence = 0;     // blocks
    uint64_t by_peer_down = 0; // blocks
    uint64_t bytes = 0;        // of all released blocks, forced included
    std::vector<forced_block> forced;
    uint64_t blocks() const { return by_fence + by_peer_down + forced.size(); }
  };

  rdma_quarantine(); // the config's defaults
  explicit rdma_quarantine(config cfg) : cfg_(cfg) {}

  /// `block` (`bytes` long) may still be read by the GETs of `holders`.
  /// With no holder it is not kept at all.
  void add(pinned_ptr block, uint64_t bytes, const std::set<uint64_t>& holders,
           time_point now);

  /// The holders a fence should go to now (marked in flight).
  std::vector<uint64_t> fences_due(time_point now);

  /// The fence to `holder` answered (ok) or failed.
  void fence_answered(uint64_t holder, bool ok, time_point now);

  /// `holder` went away: it is cleared after_down from now.
  void holder_gone(uint64_t holder, time_point now);

  /// Lets go of every block whose holders are cleared, and hands out those
  /// that waited max_hold (forced).
  released collect(time_point now);

  bool empty() const { return blocks_.empty(); }
  size_t blocks() const { return blocks_.size(); }
  uint64_t bytes() const { return bytes_; }
  const config& settings() const { return cfg_; }

private:
  struct entry {
    pinned_ptr block;
    uint64_t bytes = 0;
    uint64_t seq = 0; // order of entry: a fence clears what entered before it
    time_point since;
    std::set<uint64_t> pending; // holders not cleared yet
    bool cleared_by_down = false; // the last holder cleared went away
  };
  struct holder_state {
    bool in_flight = false;
    uint64_t fence_seq = 0; // the newest entry when the fence went out
    time_point retry_at{};  // after a failed fence
    std::optional<time_point> gone_until;
  };

  /// The holders some block still waits on.
  std::set<uint64_t> waiting_holders() const;
  void clear(uint64_t holder, uint64_t up_to_seq, bool by_down);
  void forget_idle_holders();

  config cfg_;
  std::list<entry> blocks_;
  std::map<uint64_t, holder_state> holders_;
  uint64_t seq_ = 0;
  uint64_t bytes_ = 0;
};

} // namespace ferry
