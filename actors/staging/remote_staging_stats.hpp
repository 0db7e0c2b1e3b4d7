// remote_staging_stats: a node's remote staging counters, as the source and
// as the requester, shared by the actors that count them (atomics) and read
// by `ferry stat` and the metrics. Gauges are samples, not drain receipts.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace ferry {

struct remote_staging_stats {
  // Source.
  std::atomic<int64_t> source_active{0};   // sessions holding a slot
  std::atomic<uint64_t> source_slots{0};   // the bound on them
  std::atomic<uint64_t> pins{0};           // Pins acknowledged
  std::atomic<uint64_t> pins_refused{0};   // Pins answered with an error
  std::atomic<uint64_t> delegates{0};      // source copies started
  std::atomic<uint64_t> max_in_flight{0};  // the most copies one session had running
  std::atomic<uint64_t> source_bytes{0};   // bytes the source copied on its device
  std::atomic<uint64_t> source_unpinned{0};  // sessions ended by Unpin
  std::atomic<uint64_t> source_abandoned{0}; // ended by the requester's loss or the deadline
  std::atomic<uint64_t> source_retained{0};  // chunks kept after an unconfirmed drain
  std::atomic<uint64_t> source_ucx_sessions{0}; // sessions whose CROSS is a UCX GET
  std::atomic<uint64_t> source_ucx_bytes{0};    // WRITE bytes this node GOT from requesters
  // Requester.
  std::atomic<uint64_t> shards{0};         // requester workers
  std::atomic<int64_t> active{0};          // sessions running
  std::atomic<int64_t> queued{0};          // sessions waiting for a worker
  std::atomic<uint64_t> cancelled{0};      // destroyed before Pin
  std::atomic<uint64_t> refused{0};        // the queue was full
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> effect_unknown{0}; // failed WRITEs that may have changed bytes
  std::atomic<uint64_t> bytes_read{0}, bytes_written{0};
  std::atomic<uint64_t> ucx_sessions{0}; // sessions whose CROSS was a UCX GET
  std::atomic<uint64_t> ucx_bytes{0};    // READ bytes this node GOT from sources
  std::atomic<uint64_t> max_cross_window{0}; // the most CROSSes one session had in flight

  /// Raises `most` to `seen` if it is larger (a high-water mark).
  static void raise(std::atomic<uint64_t>& most, uint64_t seen) {
    for (auto m = most.load(); seen > m && !most.compare_exchange_weak(m, seen);) {
    }
  }

  /// {"source": {...}, "requester": {...}} as JSON text.
  std::string json() const;
};

} // namespace ferry
