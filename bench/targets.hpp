// targets: the ratios a run is judged by, computed from its own points —
// a ferry row against the limit or baseline it should approach — each with
// a threshold and a verdict (pass, miss, or n/a while a side is missing).
// Three kinds: a throughput ratio at one size is baseline seconds / ferry
// seconds (at least the threshold); a latency ratio is ferry seconds /
// baseline seconds (at most the threshold); a scaling ratio is a
// concurrency row's aggregate GB/s with N consumers / with one (at least
// the threshold). Over several sizes the worst ratio counts.
// Also the plain ratios of every ferry row to its limits, per size.
// Must never: invent a number (a missing side gives n/a, not 0).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/harness.hpp"

namespace ferry::bench {

struct target_check {
  std::string name;          // "ferry_chunked / tcp_loopback at 64 MiB >= 0.60"
  std::optional<double> ratio; // the worst ratio over the sizes it covers
  double threshold = 0;
  bool at_most = false;      // true: passes when ratio <= threshold (latency)
  std::string verdict;       // "pass", "miss", "n/a: ..."
};

std::vector<target_check> check_targets(const bench_report& report);

void print_targets(std::FILE* out, const std::vector<target_check>& checks);
void print_limit_ratios(std::FILE* out, const bench_report& report);

nlohmann::json targets_json(const std::vector<target_check>& checks);

} // namespace ferry::bench
