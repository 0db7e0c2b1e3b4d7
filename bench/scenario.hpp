// scenario: one row family of the bench — what it measures, which sizes,
// and the runner that does the transfers.
// A runner is created per (scenario, consumer count), started once, then
// for each size: prepare (untimed: stage the payload, fill buffers), runs
// (each one timed transfer, verified by checksum after the clock stops),
// finish (untimed: drop what prepare staged). stop() ends its processes.
// A scenario whose feature is not built yet has no factory and a `needs`
// text: the harness reports it as "skipped: needs <...>" and writes no
// result for it. Enabling it later means giving it a factory.
// Must never: time its own set-up, or report a run whose bytes it has not
// verified.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"

namespace ferry::bench {

/// One timed run: the seconds it took, or why it failed; a row that times
/// each operation inside a run (a fan-in's gets) gives their seconds too.
struct run_outcome {
  double seconds = 0;
  std::string error;
  std::vector<double> op_seconds;

  static run_outcome took(double s, std::vector<double> ops = {}) {
    return run_outcome{s, {}, std::move(ops)};
  }
  static run_outcome failed(std::string why) { return run_outcome{0, std::move(why), {}}; }
};

class scenario_runner {
public:
  virtual ~scenario_runner() = default;
  /// Starts peers, nodes, connections. Empty string: ready; else why not.
  virtual std::string start() { return {}; }
  /// Untimed preparation of one size. Empty string: ready; else why not.
  virtual std::string prepare(uint64_t bytes) { (void) bytes; return {}; }
  /// One timed, verified run.
  virtual run_outcome run(uint64_t bytes) = 0;
  /// Untimed clean-up of one size.
  virtual void finish(uint64_t bytes) { (void) bytes; }
  /// Ends everything start() began (also called after a failure).
  virtual void stop() {}
};

using runner_factory =
  std::function<std::unique_ptr<scenario_runner>(const bench_options&, int consumers)>;

/// Which repeat counts apply to a scenario's points.
enum class repeat_kind {
  normal, // warmup + repeats
  cold,   // no warmup, cold_repeats (each run is on a fresh pair)
  rtt,    // rtt_repeats tiny round trips
};

/// Which sizes a scenario runs.
enum class size_kind {
  all,         // bench_options::sizes
  concurrency, // bench_options::concurrency_sizes
  fanin,       // bench_options::fanin_sizes (per handle)
  tiny,        // one 8-byte request (round-trip rows)
};

struct scenario_entry {
  std::string name;
  std::string what;           // one line: what a run is
  std::string limit;          // what bounds it (for docs and --list)
  runner_factory make;        // empty: not built yet
  std::string needs;          // why it is skipped when `make` is empty
  size_kind sizes = size_kind::all;
  repeat_kind repeats = repeat_kind::normal;
  bool per_consumer_count = false; // one row per bench_options::consumer_counts
  int consumers = 0; // a fixed consumer count (fan-in rows); 0: as above
};

} // namespace ferry::bench
