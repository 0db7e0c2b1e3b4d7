// plots: PNG plots of a bench run with gnuplot — throughput against size
// and latency against size, log scales, one line per scenario (concurrency
// rows one line per consumer count). Writes the data files and the gnuplot
// script next to the images, so a plot can be redrawn or restyled by hand.
// Must never: fail the bench (a missing gnuplot is reported, the data and
// script stay).
#pragma once

#include <string>

#include "bench/harness.hpp"

namespace ferry::bench {

/// Writes DIR/data/*.dat, DIR/plots.gp, then runs gnuplot for
/// DIR/throughput.png and DIR/latency.png. Empty on success, else why not.
std::string write_plots(const std::string& dir, const bench_report& report,
                        const std::string& title);

} // namespace ferry::bench
