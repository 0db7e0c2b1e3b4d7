// harness: runs the scenario table — for each row family, consumer count
// and size: prepare, warm up, repeat, summarize — and reports each point as
// it completes (progress). Collects everything the reports need.
// Must never: stop at the first failing scenario (the rest still run and
// the failure is reported), or time anything but a runner's run().
#pragma once

#include <functional>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/result.hpp"
#include "bench/scenario.hpp"

namespace ferry::bench {

struct bench_report {
  std::vector<point_result> points;
  std::vector<skipped_scenario> skipped;
  double wall_seconds = 0;

  bool failed() const;
  /// The point of (scenario, bytes, consumers), or null.
  const point_result* find(const std::string& scenario, uint64_t bytes,
                           int consumers = 1) const;
};

/// Called after each point and each skipped scenario (progress output).
struct bench_observer {
  std::function<void(const scenario_entry&, int consumers)> on_start;
  std::function<void(const point_result&)> on_point;
  std::function<void(const skipped_scenario&)> on_skipped;
};

/// True when `name` is selected by opts.only (empty: everything).
bool selected(const bench_options& opts, const std::string& name);

bench_report run_bench(const bench_options& opts,
                       const std::vector<scenario_entry>& table,
                       const bench_observer& observer);

} // namespace ferry::bench
