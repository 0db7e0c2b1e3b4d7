// bench_options: what one `ferry bench` run measures and where it reports.
// Owns: the size lists (full and --quick), repeat counts, output paths and
// the scenario filter. Plain data, filled by apps/cmd_bench.cpp.
// Must never: hold anything that runs (processes, nodes, sockets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::bench {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

/// Knobs of the ferry rows, applied to the owner peer and the consumer
/// nodes alike (0 / "" : ferry's own default).
struct ferry_knobs {
  uint64_t chunk_size = 0;
  uint32_t pull_window = 0;
  std::string scheduler_policy;
  size_t scheduler_threads = 0;
  bool eager_endpoints = false; // set by the _cold_eager rows, on both nodes
  // Both nodes' rendezvous calls by CAF requests (set by the _cold rows: the
  // control channel's probe would wire the endpoint up at the hello, and
  // those rows time the wireup in the first get).
  bool caf_control = false;
  // The consumers' --eager-max (chunked rows; -1: ferry's default). 0 runs
  // every small get the two-round-trip way, for a before/after in one run.
  int64_t consumer_eager_max = -1;
  // The chunked rows run UCX on both nodes (the RDMA path off), so their
  // rendezvous calls take the control channel (UCX active messages; CAF
  // requests between the same pair with FERRY_CONTROL_CHANNEL=caf).
  bool chunked_ucx = false;
};

struct bench_options {
  bool quick = false;
  std::string json_path;            // --json FILE ("" : none)
  std::string plot_dir;             // --plot DIR ("" : none)
  std::vector<std::string> only;    // --scenarios: names or prefixes ("" : all)
  std::vector<uint64_t> sizes;      // payload sizes of every transfer scenario
  std::vector<uint64_t> concurrency_sizes; // per-consumer sizes, concurrency rows
  std::vector<int> consumer_counts; // concurrency: consumers pulling at once
  std::vector<uint64_t> fanin_sizes; // per handle, fan-in rows
  int fanin_handles = 0;            // handles staged (each got once per run)
  int warmup = 2;                   // untimed runs per point, at least
  int repeats = 7;                  // timed runs per point, at least
  // A quick point runs on until it has warmed up and been timed for these
  // long (at most max_runs runs each), so a 4 KiB median rests on as many
  // samples as caf_request_rtt's and not on a cold handful. 0: exactly
  // warmup / repeats runs (as with --warmup / --repeats).
  double min_warmup_s = 0.05;
  double min_timed_s = 0.2;
  int max_runs = 300;
  int cold_repeats = 5;             // fresh pairs per point (cold rows)
  int rtt_repeats = 1000;           // round trips of caf_request_rtt
  double point_budget_s = 20;       // stop repeating a point after this (>= 3 runs)
  bool progress = true;             // print each point as it completes
  ferry_knobs knobs;
};

/// The defaults of a full run or of --quick (for CI: fewer sizes, repeats).
bench_options default_options(bool quick);

/// "4K", "64KiB", "16M", "1g", "4096" -> bytes; 0 when unreadable.
uint64_t parse_size(const std::string& text);

/// 4096 -> "4 KiB", 16777216 -> "16 MiB", 100 -> "100 B".
std::string format_size(uint64_t bytes);

} // namespace ferry::bench
