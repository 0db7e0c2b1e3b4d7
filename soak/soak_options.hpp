// soak_options: what one `ferry soak` run does (apps/cmd_soak.cpp fills it).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ferry::soak {

struct soak_options {
  uint64_t seed = 0;                          // 0: one from the clock (printed)
  int nodes = 4;                              // node processes (at least 2)
  std::chrono::seconds duration{60};          // traffic stops after this...
  uint64_t operations = 0;                    // ...or after this many (0: no count)
  uint64_t max_size = 256ull << 20;           // the largest payload
  int concurrency = 6;                        // operations in flight
  std::chrono::milliseconds fault_interval{6000}; // 0: no faults
  double max_rss_slope = 64;                  // MiB/min a node may grow (long runs)
  double rss_slope_min_seconds = 300;         // the span a slope must cover to count
  std::chrono::seconds settle{30};            // the bound on reaching the baseline
  bool json = false;
  bool progress = true;
  std::string log_dir;                        // the nodes' logs ("": a temporary one)
  // Test hooks: plant a fault the checks must find.
  int test_corrupt_node = -1; // this node flips a byte of every payload it gets
  int test_leak_node = -1;    // this node stages one payload nobody asked for
};

} // namespace ferry::soak
