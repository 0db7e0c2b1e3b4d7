// fault_plan: the seeded schedule of faults of a soak run, decided before
// it starts (plain data: the same seed and options give the same plan, so
// a run that found something can be replayed). Faults come every
// `interval` or so, and the kinds take turns in a seeded order, so a short
// run still sees each kind once.
// Owns: nothing. Must never: depend on anything but its inputs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::soak {

enum class fault_kind {
  kill_consumer_mid_pull, // SIGKILL a node while it pulls chunks
  kill_consumer_mid_get,  // SIGKILL a node while its UCX GET may run
  kill_owner,             // SIGKILL the owner while two nodes get from it
  stop_resume,            // SIGSTOP a node, SIGCONT it a while later
  graceful_shutdown,      // SIGTERM a node under traffic; it must exit 0 in time
  budget_burst,           // pinned payloads past a node's registered budget
};

inline constexpr fault_kind all_fault_kinds[] = {
  fault_kind::kill_consumer_mid_pull, fault_kind::kill_consumer_mid_get,
  fault_kind::kill_owner,             fault_kind::stop_resume,
  fault_kind::graceful_shutdown,      fault_kind::budget_burst,
};

const char* to_string(fault_kind k);

struct planned_fault {
  std::chrono::milliseconds at{0}; // from the run's start
  fault_kind kind{};
  uint64_t seed = 0;               // the fault's own choices (victim, delays)
};

/// The faults of a run of `duration` with one every `interval` (each
/// jittered by up to a quarter of it), the first after one interval.
std::vector<planned_fault> make_fault_plan(uint64_t seed, std::chrono::milliseconds duration,
                                           std::chrono::milliseconds interval);

} // namespace ferry::soak
