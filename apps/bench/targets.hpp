// targets: the ratios a run is judged by, computed from its own points —
// a ferry row against the limit or baseline it should approach — each with
// a threshold and a verdict (pass, miss, or n/a while a side is missing).
// The throughput ratio at one size is baseline seconds / ferry seconds.
// Also the plain ratios of every ferry row to its limits, per size.
// Must never: invent a number (a missing side gives n/a, not 0).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/bench/harness.hpp"

namespace ferry::bench {

struct target_check {
  std::string name;          // "ferry_chunked / tcp_loopback at 64 MiB >= 0.50"
  std::optional<double> ratio; // the worst ratio over the sizes it covers
  double threshold = 0;
  std::string verdict;       // "pass", "miss", "n/a: ..."
};

std::vector<target_check> check_targets(const bench_report& report);

void print_targets(std::FILE* out, const std::vector<target_check>& checks);
void print_limit_ratios(std::FILE* out, const bench_report& report);

nlohmann::json targets_json(const std::vector<target_check>& checks);

} // namespace ferry::bench
