// report_json: the machine-readable result of a bench run:
//   {"machine": {...}, "options": {...}, "units": {...},
//    "results": [{"scenario", "bytes", "seconds_median", "seconds_min",
//                 "seconds_max", "gbps", "runs", "consumers"}],
//    "failed": [{"scenario", "bytes", "consumers", "error"}],
//    "skipped": [{"scenario", "reason"}], "targets": [...]}
// Only measured points are in "results"; a scenario not built yet is only
// in "skipped". gbps is GB/s (1e9 bytes per second), aggregate over
// consumers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_options.hpp"
#include "bench/harness.hpp"
#include "bench/targets.hpp"

namespace ferry::bench {

nlohmann::json report_json(const bench_options& opts, const nlohmann::json& machine,
                           const bench_report& report,
                           const std::vector<target_check>& targets);

/// Writes the JSON to `path` (via a temporary and a rename); empty on
/// success, else why not.
std::string write_json(const std::string& path, const nlohmann::json& doc);

} // namespace ferry::bench
