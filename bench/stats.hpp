// stats: the summary of one point's timed runs (median, min, max), and of
// the operations inside them where a row times each (p50, p99, max).
// Pure arithmetic on a copy of the samples; no clocks, no I/O.
#pragma once

#include <cstdint>
#include <vector>

namespace ferry::bench {

struct summary {
  double median = 0;
  double min = 0;
  double max = 0;
  int runs = 0;
};

/// Median (mean of the middle two for an even count), min and max.
/// An empty sample set gives all zeros.
summary summarize(std::vector<double> samples);

/// The seconds of single operations (each get of a fan-in run).
struct latency {
  double p50 = 0;
  double p99 = 0;
  double max = 0;
  uint64_t ops = 0; // 0: the row times no single operations
};

/// Nearest-rank percentiles: p is the smallest sample with at least p% of
/// the samples at or below it. An empty sample set gives all zeros.
latency percentiles(std::vector<double> samples);

} // namespace ferry::bench
