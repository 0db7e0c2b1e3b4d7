// run_ledger: what a soak run saw, and the verdict on it (plain data,
// thread-safe to fill). Operations with how they ended, the windows in
// which a node was under a fault, the faults themselves, the nodes' memory
// samples, and violations found outside operations (a node not back at its
// baseline, a shutdown that overran, a node that died), and the node deaths
// inside a library that are known and not ferry's (known_aborts.hpp).
// The verdict: a mismatch or a hang is always a violation; a failure (a
// clear error, or the node exited) is survived when a node of the
// operation was under a fault while it ran, else a violation; a failure
// that took longer than the operation's bound is a violation.
// Owns: the records. Must never: judge while the run still adds to it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "soak/fault_plan.hpp"
#include "soak/node_link.hpp"

namespace ferry::soak {

using soak_clock = std::chrono::steady_clock;

struct op_record {
  std::string kind;        // get, get_rdma, call, stream, giveup, ...
  std::vector<int> nodes;  // the node slots it involved
  soak_clock::time_point start, end;
  node_answer::kind how = node_answer::kind::ok;
  std::string text;        // the answer (why it failed)
  std::chrono::milliseconds bound{0}; // the longest it may take to fail
  uint64_t bytes = 0;      // verified bytes (ok only)
};

struct fault_record {
  std::string kind; // a fault_kind's name, or a traffic fault (caller_gave_up)
  int victim = -1;
  std::string note; // what happened (for the report)
  bool survived = true;
};

struct kind_counts {
  uint64_t ok = 0, survived = 0, violations = 0, bytes = 0;
};

struct rss_slope {
  int node = 0;
  int incarnation = 0;
  double seconds = 0;       // the span the slope is fitted over
  double mib_per_minute = 0;
  uint64_t last_bytes = 0;
};

struct run_verdict {
  std::map<std::string, kind_counts> ops;
  std::map<std::string, uint64_t> faults_injected, faults_survived;
  std::vector<std::string> violations; // every one, in order found
  std::vector<std::string> known_aborts; // node deaths inside a library (known_aborts.hpp)
  std::vector<rss_slope> rss;
  uint64_t operations = 0;
};

class run_ledger {
public:
  void add_op(op_record op);
  /// Node `node` is under a fault from `from` to `to`.
  void add_fault_window(int node, soak_clock::time_point from, soak_clock::time_point to);
  void add_fault(fault_record f);
  void add_violation(std::string what);
  /// A node process died on its own: `what` names it and how, `log` is
  /// its log's end, `signal` what ended it (0: it exited). A violation
  /// with the log, unless it is a known library abort (known_aborts.hpp),
  /// which is recorded apart. True when it was a violation.
  bool add_node_death(const std::string& what, const std::string& log, int signal);
  void add_rss(int node, int incarnation, double at_seconds, uint64_t bytes);
  uint64_t operations() const;
  uint64_t violations_so_far() const;
  uint64_t faults() const;

  /// Judges the run (see the file comment).
  run_verdict judge() const;

private:
  bool under_fault(const op_record& op) const;

  mutable std::mutex mtx_;
  std::vector<op_record> ops_;
  struct window {
    int node;
    soak_clock::time_point from, to;
  };
  std::vector<window> windows_;
  std::vector<fault_record> faults_;
  std::vector<std::string> violations_;
  std::vector<std::string> known_aborts_;
  struct sample {
    double at;
    uint64_t bytes;
  };
  std::map<std::pair<int, int>, std::vector<sample>> rss_;
};

/// The least-squares slope of `bytes` over `seconds`, in MiB per minute
/// (0 for fewer than two points).
double slope_mib_per_minute(const std::vector<double>& seconds,
                            const std::vector<double>& bytes);

} // namespace ferry::soak
