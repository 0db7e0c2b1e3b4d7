// report_table: the human-readable output of a bench run — one line per
// point while it runs (progress, on stdout) and the whole table at the end,
// with the skipped scenarios and why.
// Must never: change a number (it formats what the harness measured).
#pragma once

#include <cstdio>
#include <string>

#include "bench/harness.hpp"
#include "bench/result.hpp"

namespace ferry::bench {

/// "1.23 ms", "45.6 us", "2.10 s".
std::string format_seconds(double s);

void print_header(std::FILE* out);
void print_point(std::FILE* out, const point_result& p);
void print_skipped(std::FILE* out, const skipped_scenario& s);

/// The final table: every point, then the skipped scenarios.
void print_table(std::FILE* out, const bench_report& report);

} // namespace ferry::bench
