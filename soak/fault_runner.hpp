// fault_runner: carries out one planned fault on the cluster while traffic
// runs, and records it: the fault, the window in which its victim's
// operations may fail (until it is back and a grace after), and its own
// operations (the gets a killed node was in). A killed or shut-down node is
// restarted and rejoins; one that cannot is a violation.
// Owns: nothing. Must never: leave a node stopped (SIGSTOP) or down.
#pragma once

#include <random>

#include "soak/fault_plan.hpp"
#include "soak/run_ledger.hpp"
#include "soak/soak_cluster.hpp"
#include "soak/traffic.hpp"

namespace ferry::soak {

/// How long after a node is back its peers may still fail operations on
/// it (they learn of the new incarnation, the old one's leases end).
inline constexpr std::chrono::milliseconds fault_grace{3000};

class fault_runner {
public:
  fault_runner(soak_cluster& cluster, run_ledger& ledger, traffic& ops,
               const soak_options& opts)
    : cluster_(cluster), ledger_(ledger), ops_(ops), opts_(opts) {}

  void run(const planned_fault& f);

private:
  void kill_consumer(std::mt19937_64& rng, bool rdma, fault_record& f);
  void kill_owner(std::mt19937_64& rng, fault_record& f);
  void stop_resume(std::mt19937_64& rng, fault_record& f);
  void graceful_shutdown(std::mt19937_64& rng, fault_record& f);
  void budget_burst(std::mt19937_64& rng, fault_record& f);
  /// Restarts `slot` and opens its fault window from `from`.
  void bring_back(int slot, soak_clock::time_point from, fault_record& f);
  /// Waits (at most 5 s) until `owner` holds a lease; false if it never did.
  bool await_lease(int owner);
  uint64_t fault_payload_size() const;

  soak_cluster& cluster_;
  run_ledger& ledger_;
  traffic& ops_;
  const soak_options& opts_;
};

} // namespace ferry::soak
