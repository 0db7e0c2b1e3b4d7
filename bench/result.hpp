// result: one measured point (scenario x payload size x consumers), and one
// scenario that was declared but not run (with the reason).
// Plain data shared by the harness and every report (table, JSON, plots,
// targets). Throughput is in GB/s: 1e9 bytes per second, aggregated over
// all consumers for the concurrency rows.
#pragma once

#include <cstdint>
#include <string>

#include "bench/stats.hpp"

namespace ferry::bench {

struct point_result {
  std::string scenario;
  uint64_t bytes = 0;  // per transfer (per consumer in concurrency rows)
  int consumers = 1;
  summary seconds;     // per run: one transfer, or all consumers' transfers
  latency op_seconds;  // each get of the timed runs (fan-in rows), else empty
  std::string error;   // non-empty: the point failed (checksum, timeout, ...)

  bool ok() const { return error.empty() && seconds.runs > 0; }
  /// Transfers in one run: each consumer's one, or a fan-in's gets.
  double transfers_per_run() const {
    return op_seconds.ops > 0 && seconds.runs > 0
             ? static_cast<double>(op_seconds.ops) / seconds.runs
             : static_cast<double>(consumers);
  }
  /// Aggregate GB/s at the median run.
  double gbps() const {
    return seconds.median > 0
             ? static_cast<double>(bytes) * transfers_per_run() / seconds.median / 1e9
             : 0.0;
  }
  /// "ferry_chunked_concurrent x4" for concurrency rows, else the scenario.
  std::string series() const {
    return consumers > 1 || scenario.find("concurrent") != std::string::npos
             ? scenario + " x" + std::to_string(consumers)
             : scenario;
  }
};

struct skipped_scenario {
  std::string scenario;
  std::string reason; // "needs <feature>", or why it could not start
};

} // namespace ferry::bench
