// chunk_pool: the accounting of the pinned staging chunks, a plain data
// structure (no native calls, no threads of its own; one mutex so staging
// workers can share it). Native work happens between its two-phase calls,
// never under its lock:
//   checkout(key) -> reuse an idle chunk of that key (context, node), or
//                    construct a new one (the caller allocates, then
//                    constructed()), or move an idle chunk of another key
//                    (the caller releases it natively, then moved(), then
//                    allocates for the new key and constructed()), or
//                    resource_exhausted at once: never a wait, never an
//                    uncharged allocation.
//   checkin(id, ok) -> idle only when its copy's event completed and the
//                    caller's context was restored; else retained.
//   begin_close / closed -> idle chunks leave; a second close of the same
//                    chunk is refused (no double free); a failed cleanup
//                    keeps the chunk retained, and charged.
// Constructing, active, closing and retained chunks all count against
// `capacity`; only a clean construction failure or a clean close frees a
// slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/expected.hpp>

#include "staging/cuda_api.hpp"

namespace ferry::staging {

using chunk_id = uint32_t;

/// What a chunk is bound to: a context and a NUMA node (-1: any).
struct chunk_key {
  cuda_context ctx = 0;
  int node = -1;
  friend bool operator==(const chunk_key& a, const chunk_key& b) {
    return a.ctx == b.ctx && a.node == b.node;
  }
};

enum class chunk_state { constructing, idle, active, closing, retained };

const char* to_string(chunk_state s);

struct chunk_pool_stats {
  size_t constructing = 0, idle = 0, active = 0, closing = 0, retained = 0;
  uint64_t allocations = 0; // chunks constructed
  uint64_t reuses = 0;      // checkouts served by an idle chunk
  uint64_t moves = 0;       // idle chunks released for another key
  uint64_t exhausted = 0;   // checkouts refused
  uint64_t bytes_to_host = 0, bytes_to_device = 0;
  size_t counted() const { return constructing + idle + active + closing + retained; }
};

class chunk_pool {
public:
  enum class action { reuse, construct, move };
  struct grant {
    chunk_id id = 0;
    action what = action::reuse;
    chunk_key old_key;             // move: what it is bound to now
    std::shared_ptr<void> native;  // reuse, move: the chunk's native state
  };
  enum class outcome { ok, failed_clean, failed_uncertain };

  explicit chunk_pool(size_t capacity) : capacity_(capacity) {}

  caf::expected<grant> checkout(const chunk_key& key);
  /// A constructing chunk's allocation finished: ok (active, with its
  /// native state), failed_clean (nothing left: the slot is freed) or
  /// failed_uncertain (retained).
  void constructed(chunk_id id, outcome o, std::shared_ptr<void> native = {});
  /// A moving chunk's native release finished: ok (constructing for its new
  /// key), else retained.
  void moved(chunk_id id, outcome o);
  /// The active chunk's copy is over: ok means its event completed and the
  /// caller's context is restored (idle), else retained.
  void checkin(chunk_id id, bool ok);
  /// Idle chunks that now close (the caller frees each, then closed()).
  std::vector<std::pair<chunk_id, std::shared_ptr<void>>> begin_close_idle();
  /// True once per chunk: an idle chunk begins closing.
  bool begin_close(chunk_id id);
  void closed(chunk_id id, outcome o);

  void count_copied(bool to_host, uint64_t bytes);
  chunk_pool_stats stats() const;
  size_t capacity() const { return capacity_; }

private:
  struct slot {
    chunk_key key;
    chunk_state state = chunk_state::constructing;
    std::shared_ptr<void> native;
  };
  slot* find(chunk_id id, chunk_state expected);

  mutable std::mutex mu_;
  size_t capacity_;
  std::map<chunk_id, slot> slots_;
  chunk_id next_id_ = 1;
  chunk_pool_stats counters_; // the cumulative counters only
};

} // namespace ferry::staging
