#include "bench/harness.hpp"

#include <chrono>

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::vector<uint64_t> sizes_of(const scenario_entry& e, const bench_options& o) {
  switch (e.sizes) {
    case size_kind::concurrency:
      return o.concurrency_sizes;
    case size_kind::fanin:
      return o.fanin_sizes;
    case size_kind::tiny:
      return {8};
    case size_kind::all:
      break;
  }
  return o.sizes;
}

struct repeat_plan {
  int warmup;
  int repeats;
  double budget_s;
  double min_warmup_s = 0; // quick points run on for these long
  double min_timed_s = 0;
  int max_runs = 0;
};

repeat_plan plan_of(const scenario_entry& e, const bench_options& o) {
  switch (e.repeats) {
    case repeat_kind::cold: // every run is a fresh pair: exactly as many
      return {0, o.cold_repeats, o.point_budget_s};
    case repeat_kind::rtt:
      return {10, o.rtt_repeats, o.point_budget_s};
    case repeat_kind::normal:
      break;
  }
  return {o.warmup, o.repeats, o.point_budget_s,
          o.min_warmup_s, o.min_timed_s, o.max_runs};
}

/// Whether run `i` (0-based) of a loop started at `t0` is still due.
bool run_due(int i, int at_least, double min_s, int max_runs, clock_type::time_point t0) {
  return i < at_least || (i < max_runs && since(t0) < min_s);
}

// Measures one point on a started runner.
point_result measure(scenario_runner& r, const scenario_entry& e, int consumers,
                     uint64_t bytes, const repeat_plan& plan) {
  point_result p;
  p.scenario = e.name;
  p.bytes = bytes;
  p.consumers = consumers;
  if (auto err = r.prepare(bytes); !err.empty()) {
    p.error = "prepare: " + err;
    r.finish(bytes);
    return p;
  }
  auto w0 = clock_type::now();
  for (int i = 0; run_due(i, plan.warmup, plan.min_warmup_s, plan.max_runs, w0); ++i) {
    auto out = r.run(bytes);
    if (!out.error.empty()) {
      p.error = "warm-up: " + out.error;
      r.finish(bytes);
      return p;
    }
  }
  std::vector<double> samples;
  std::vector<double> op_samples;
  auto t0 = clock_type::now();
  for (int i = 0; run_due(i, plan.repeats, plan.min_timed_s, plan.max_runs, t0); ++i) {
    auto out = r.run(bytes);
    if (!out.error.empty()) {
      p.error = out.error;
      break;
    }
    samples.push_back(out.seconds);
    op_samples.insert(op_samples.end(), out.op_seconds.begin(), out.op_seconds.end());
    // A slow point stops early, but never with fewer than three runs.
    if (samples.size() >= 3 && since(t0) > plan.budget_s)
      break;
  }
  r.finish(bytes);
  p.seconds = summarize(std::move(samples));
  p.op_seconds = percentiles(std::move(op_samples));
  return p;
}

} // namespace

bool bench_report::failed() const {
  for (const auto& p : points)
    if (!p.ok())
      return true;
  return false;
}

const point_result* bench_report::find(const std::string& scenario, uint64_t bytes,
                                       int consumers) const {
  for (const auto& p : points)
    if (p.scenario == scenario && p.bytes == bytes && p.consumers == consumers
        && p.ok())
      return &p;
  return nullptr;
}

bool selected(const bench_options& opts, const std::string& name) {
  if (opts.only.empty())
    return true;
  for (const auto& want : opts.only) {
    if (want == name)
      return true;
    if (!want.empty() && want.back() == '*'
        && name.compare(0, want.size() - 1, want, 0, want.size() - 1) == 0)
      return true;
  }
  return false;
}

bench_report run_bench(const bench_options& opts,
                       const std::vector<scenario_entry>& table,
                       const bench_observer& observer) {
  bench_report report;
  auto t0 = clock_type::now();
  for (const auto& e : table) {
    if (!selected(opts, e.name))
      continue;
    if (!e.make) {
      skipped_scenario s{e.name, "needs " + e.needs};
      if (observer.on_skipped)
        observer.on_skipped(s);
      report.skipped.push_back(std::move(s));
      continue;
    }
    std::vector<int> counts{1};
    if (e.consumers > 0)
      counts = {e.consumers};
    else if (e.per_consumer_count)
      counts = opts.consumer_counts;
    auto plan = plan_of(e, opts);
    for (int consumers : counts) {
      if (observer.on_start)
        observer.on_start(e, consumers);
      auto runner = e.make(opts, consumers);
      std::string start_error;
      if (!runner)
        start_error = "no runner";
      else
        start_error = runner->start();
      for (auto bytes : sizes_of(e, opts)) {
        point_result p;
        if (!start_error.empty()) {
          p.scenario = e.name;
          p.bytes = bytes;
          p.consumers = consumers;
          p.error = "start: " + start_error;
        } else {
          p = measure(*runner, e, consumers, bytes, plan);
        }
        if (observer.on_point)
          observer.on_point(p);
        report.points.push_back(std::move(p));
      }
      if (runner)
        runner->stop();
    }
  }
  report.wall_seconds = since(t0);
  return report;
}

} // namespace ferry::bench
