// stats: the summary of one point's timed runs (median, min, max).
// Pure arithmetic on a copy of the samples; no clocks, no I/O.
#pragma once

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

} // namespace ferry::bench
