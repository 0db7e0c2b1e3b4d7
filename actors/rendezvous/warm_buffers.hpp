// warm_buffers: a small, bounded cache of large byte buffers whose pages are
// already faulted in, one per node. A node that receives large payloads
// again and again puts each fetched payload or get result into a buffer
// given back, instead of into fresh pages: on these guests faulting in 64
// MiB of fresh memory costs more than the GET that filled it
// (docs/performance.md). Handler threads give back their requests'
// payloads, callers their get results (node_context::give_back).
// Thread-safe: consumers take on their threads, anyone gives back.
// A buffer nobody took for a while is let go (drop_idle, called by the
// node's warm_buffer_reaper), so a node that stopped getting large results
// does not hold their memory for the rest of its life.
// Must never: keep more than its byte bound, keep a small buffer, hand a
// large buffer to a small result (the caller would hold all of it), evict
// a buffer given back for a prepared one, keep two prepared ones, or report
// after close.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <vector>

#include "protocol/byte_buffer.hpp"

namespace prometheus {
class Counter;
class Gauge;
} // namespace prometheus

namespace ferry {

/// Where a node's warm buffers report (each may be null).
struct warm_buffer_metrics {
  prometheus::Gauge* kept_bytes = nullptr;   // capacity kept now
  prometheus::Counter* reuses = nullptr;     // takes a kept buffer served
  prometheus::Counter* prepared = nullptr;   // prepared buffers kept
};

class warm_buffers {
public:
  /// Buffers below this capacity are not worth keeping, and results below
  /// this size take none.
  static constexpr size_t min_kept = 4ull << 20;
  /// A kept buffer serves a result only up to this many times its size.
  static constexpr size_t max_overhang = 4;

  /// Keeps at most `max_bytes` of capacity (0: keeps nothing).
  explicit warm_buffers(size_t max_bytes, warm_buffer_metrics metrics = {})
    : max_bytes_(max_bytes), metrics_(metrics) {}

  /// An empty buffer with room for `size` bytes: the smallest kept one that
  /// fits (at least min_kept asked, at most max_overhang times the room
  /// needed), else an empty fresh one (no room).
  byte_buffer take(size_t size);

  /// A buffer whose contents are to be overwritten (a GET's destination):
  /// the smallest kept one with room for `size` bytes, cut to `size` when
  /// it is longer (never zero-filled) and else left as long as it is, or an
  /// empty fresh one. The caller grows it to `size` (no fill was done here).
  byte_buffer take_unfilled(size_t size);

  /// Keeps `buf` for a later take when it is large and fits the bound, the
  /// oldest kept ones making room; else frees it. Its bytes stay as they
  /// are (take empties the buffer, take_unfilled cuts it or leaves it to be overwritten).
  void give(byte_buffer&& buf);

  /// The capacity a buffer prepared for a result of `size` bytes gets:
  /// rounded up to 2 MiB, so a next result a little larger takes it too
  /// (only `size` bytes of it are faulted in).
  static size_t prepared_capacity(size_t size);

  /// Whether a buffer prepared ahead (faulted in) for a result of `size`
  /// bytes would be kept: `size` is at least min_kept, no kept buffer
  /// already fits it, and its capacity fits the bound beside what is kept.
  /// At most one prepared buffer is kept: a new one replaces the one before
  /// (no result took it); a prepared buffer never evicts another one.
  /// False once closed.
  bool wants_prepared(size_t size) const;

  /// Keeps a prepared buffer (its first size() bytes faulted in) if
  /// wants_prepared still says so for its size, in place of the one
  /// prepared before, counting it; else frees it. True if kept.
  bool keep_prepared(byte_buffer&& buf);

  /// Frees every kept buffer that was given back or prepared at least
  /// `max_idle` before `now` (none for a zero `max_idle`); returns the
  /// capacity freed.
  size_t drop_idle(std::chrono::steady_clock::time_point now,
                   std::chrono::milliseconds max_idle);

  /// Frees what is kept and keeps nothing from now on (a later give frees
  /// its buffer); the metrics are not written again. The node's stop calls
  /// it: a worker may still hold the cache after its node's metrics went.
  void close();

  size_t kept_bytes() const;
  size_t kept_buffers() const;

private:
  struct kept_buffer {
    byte_buffer bytes;
    std::chrono::steady_clock::time_point since; // given back or prepared
  };

  mutable std::mutex mu_;
  std::vector<kept_buffer> kept_; // oldest first
  size_t kept_bytes_ = 0;
  const char* prepared_ = nullptr; // the kept prepared buffer's memory, if any
  size_t max_bytes_; // 0 once closed
  warm_buffer_metrics metrics_;

  void report_kept(); // with mu_ held
  byte_buffer take_kept(size_t size); // the smallest that fits, or empty
  // With mu_ held: wants_prepared for a buffer of `capacity`.
  bool wants_prepared_locked(size_t size, size_t capacity) const;
  // With mu_ held: where the kept prepared buffer is, kept_.size() if none.
  size_t prepared_index() const;
  static bool fits(const byte_buffer& b, size_t size);
  // With mu_ held: takes kept_[i] out, keeping the count and the prepared
  // mark in step.
  byte_buffer remove_locked(size_t i);
};

} // namespace ferry
