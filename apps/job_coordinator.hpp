// The example distributed job's coordinator: connects to every node, spawns
// a sort worker on each through its gateway, stages the input shards on its
// own node, sends each worker handles, pulls the sorted results back and
// verifies every one against its own computation. Prints progress and a
// summary (bytes moved, time, throughput, path counts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/node_config.hpp"

namespace ferry::app {

struct job_options {
  std::vector<std::string> nodes;  // HOST:PORT of each node
  uint64_t total_bytes = 192 * MiB; // input size over all shards
  uint32_t shards_per_node = 2;
  uint64_t seed = 1;
  std::string summary_json;         // path of a JSON summary ("" : none)
};

/// Runs the job; returns the process exit code (0: every shard verified).
int run_job(const job_options& opts, node_config cfg);

} // namespace ferry::app
