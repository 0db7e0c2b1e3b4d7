// external_region: one registration of memory the caller owns
// (register_external_memory) or handed over (register_owned), shared by the
// caller's region_guard, the slots staged in it and the arena pool actor.
//
// Owns: the mapping (until the pool unmaps it), the owned buffer of a
// register_owned region, and the region's life-cycle state:
// - anchors: an in-flight count. A slot staged in the region holds one;
//   unregister waits for them (bounded) before it unmaps.
// - the gate: once closed, no new anchor is handed out. try_anchor counts
//   itself in first and then reads the gate (both sequentially consistent),
//   so a registration racing the gate is either refused or seen by the drain.
// - the copy gate: chunked reads copy out of the region under a mutex that
//   also guards the deregistration latch; a copy in progress delays the
//   latch, a copy after the latch is refused.
// - the release signal: resolved once the pool has unmapped the region (or
//   at the end of a graceful shutdown); only then may the caller free the
//   memory.
// Must never: let a copy read the region after the latch, or resolve the
// release signal before the unmap.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "rdma/arena_pool.hpp" // mapped_region

namespace ferry {

class external_region : public std::enable_shared_from_this<external_region> {
public:
  /// How an unregister ended; both mean the memory is released.
  enum class outcome {
    drained,         // every anchor was gone before the unmap
    drain_timed_out, // unmapped with anchors left (they now read nothing)
  };

  /// Holds the region's in-flight count up while alive.
  class anchor {
  public:
    explicit anchor(std::shared_ptr<external_region> region);
    ~anchor();
    anchor(const anchor&) = delete;
    anchor& operator=(const anchor&) = delete;
    const std::shared_ptr<external_region>& region() const { return region_; }

  private:
    std::shared_ptr<external_region> region_;
  };

  /// [data, data + size) stays the caller's; `owned`, when not empty, is
  /// the buffer of a register_owned region (data points into it).
  external_region(char* data, uint64_t size, std::vector<char> owned = {});

  char* data() const { return data_; }
  uint64_t size() const { return size_; }
  /// The address peers GET from (the registered pointer).
  uint64_t address() const { return reinterpret_cast<uintptr_t>(data_); }
  /// What registration pins: the range widened to whole pages.
  uint64_t effective_begin() const;
  uint64_t effective_end() const;
  uint64_t pinned_bytes() const { return effective_end() - effective_begin(); }

  // -- set by the arena pool actor when it maps the region ------------------

  void attach_mapping(std::unique_ptr<mapped_region> mapping, uint64_t id,
                      uint64_t generation);
  /// Unmaps (the mapping's destructor); the key stays for diagnostics.
  void drop_mapping();
  /// Safe from any thread: the pool's thread maps and unmaps, owners read.
  /// The key, id and generation are written once, before mapped() turns
  /// true, and never change after.
  bool mapped() const { return mapped_.load(std::memory_order_acquire); }
  uint64_t id() const { return id_; }
  uint64_t generation() const { return generation_; }
  /// The packed remote key (empty before the mapping).
  std::shared_ptr<const std::vector<uint8_t>> rkey() const { return rkey_; }

  // -- anchors and the gate --------------------------------------------------

  /// An anchor, or nullptr once the gate is closed.
  std::shared_ptr<anchor> try_anchor();
  void close_gate() { gated_.store(true, std::memory_order_seq_cst); }
  bool gated() const { return gated_.load(std::memory_order_seq_cst); }
  uint64_t in_flight() const { return in_flight_.load(std::memory_order_seq_cst); }

  // -- the copy gate and the latch ------------------------------------------

  /// Copies [offset, offset + len) to `dest`; false after the latch (or for
  /// a range outside the region).
  bool copy_out(uint64_t offset, uint64_t len, char* dest) const;
  /// From now on copy_out refuses; waits for a copy in progress.
  void latch();
  bool latched() const;

  // -- the release signal ---------------------------------------------------

  /// Resolves the release signal (first call wins).
  void mark_released(outcome how);
  bool released() const;
  /// Waits up to `timeout` for the release; its outcome, or nullopt.
  std::optional<outcome> wait_released(std::chrono::milliseconds timeout) const;
  /// The owned buffer, once released (empty for external memory).
  std::vector<char> take_owned();
  /// The owned buffer of a region that was never mapped (a refused
  /// register_owned gives its allocation back).
  std::vector<char> take_unregistered_owned();

private:
  char* data_;
  uint64_t size_;
  std::vector<char> owned_;
  std::unique_ptr<mapped_region> mapping_; // the pool actor's thread only
  std::atomic<bool> mapped_{false};
  std::shared_ptr<const std::vector<uint8_t>> rkey_;
  uint64_t id_ = 0;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> in_flight_{0};
  std::atomic<bool> gated_{false};
  mutable std::mutex copy_gate_;
  bool latched_ = false; // guarded by copy_gate_
  std::once_flag release_once_;
  std::promise<outcome> release_promise_;
  std::shared_future<outcome> released_;
};

using external_region_ptr = std::shared_ptr<external_region>;

} // namespace ferry
