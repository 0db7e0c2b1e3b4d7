// soak_report: the end of a soak run as text (a table and the violations)
// or as one JSON object (--json); both end with the command that replays
// the run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "soak/fault_plan.hpp"
#include "soak/run_ledger.hpp"
#include "soak/soak_options.hpp"

namespace ferry::soak {

struct soak_summary {
  const soak_options* opts = nullptr;
  double seconds = 0;
  run_verdict verdict;
  std::vector<planned_fault> plan;
  nlohmann::json nodes = nlohmann::json::array(); // per slot: role, incarnations, final stat
  std::string log_dir;
};

/// `ferry soak --seed ...` with the options that shaped this run.
std::string replay_command(const soak_options& opts);

nlohmann::json report_json(const soak_summary& s);
void print_report(const soak_summary& s);

} // namespace ferry::soak
