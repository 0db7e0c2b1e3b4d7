#include "soak/run_ledger.hpp"

#include <time.h>

#include <cstdio>

#include "soak/known_aborts.hpp"

namespace ferry::soak {

namespace {

std::string seconds_text(soak_clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

/// `t` as the local time of day, to the millisecond: the clock the nodes'
/// logs are stamped with.
std::string wall_text(soak_clock::time_point t) {
  auto wall = std::chrono::system_clock::now()
              - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                soak_clock::now() - t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch());
  time_t secs = static_cast<time_t>(ms.count() / 1000);
  struct tm parts {};
  localtime_r(&secs, &parts);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min,
                parts.tm_sec, static_cast<int>(ms.count() % 1000));
  return buf;
}

/// The operation, its nodes and when it ran (to match the nodes' logs).
std::string describe_op(const op_record& op) {
  std::string nodes;
  for (auto n : op.nodes)
    nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
  return op.kind + " on nodes " + nodes + " (" + wall_text(op.start) + " to "
         + wall_text(op.end) + ")";
}

} // namespace

void run_ledger::add_op(op_record op) {
  std::lock_guard<std::mutex> guard{mtx_};
  ops_.push_back(std::move(op));
}

void run_ledger::add_fault_window(int node, soak_clock::time_point from,
                                  soak_clock::time_point to) {
  std::lock_guard<std::mutex> guard{mtx_};
  windows_.push_back({node, from, to});
}

void run_ledger::add_fault(fault_record f) {
  std::lock_guard<std::mutex> guard{mtx_};
  faults_.push_back(std::move(f));
}

void run_ledger::add_violation(std::string what) {
  std::lock_guard<std::mutex> guard{mtx_};
  violations_.push_back(std::move(what));
}

bool run_ledger::add_node_death(const std::string& what, const std::string& log,
                                int signal) {
  auto known = known_library_abort(log, signal);
  std::lock_guard<std::mutex> guard{mtx_};
  if (!known) {
    constexpr size_t shown = node_link::shown_log_chars; // where it died
    violations_.push_back(what + ": "
                          + (log.size() > shown ? log.substr(log.size() - shown) : log));
    return true;
  }
  known_aborts_.push_back(what + ": " + *known);
  return false;
}

void run_ledger::add_rss(int node, int incarnation, double at_seconds, uint64_t bytes) {
  std::lock_guard<std::mutex> guard{mtx_};
  rss_[{node, incarnation}].push_back({at_seconds, bytes});
}

uint64_t run_ledger::operations() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return ops_.size();
}

uint64_t run_ledger::faults() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return faults_.size();
}

uint64_t run_ledger::violations_so_far() const {
  std::lock_guard<std::mutex> guard{mtx_};
  uint64_t n = violations_.size();
  for (const auto& op : ops_)
    n += op.how == node_answer::kind::mismatch || op.how == node_answer::kind::hung;
  return n;
}

bool run_ledger::under_fault(const op_record& op) const {
  for (const auto& w : windows_)
    for (auto n : op.nodes)
      if (w.node == n && w.from <= op.end && op.start <= w.to)
        return true;
  return false;
}

run_verdict run_ledger::judge() const {
  std::lock_guard<std::mutex> guard{mtx_};
  run_verdict v;
  v.operations = ops_.size();
  for (const auto& op : ops_) {
    auto& c = v.ops[op.kind];
    auto took = op.end - op.start;
    switch (op.how) {
      case node_answer::kind::ok:
        ++c.ok;
        c.bytes += op.bytes;
        continue;
      case node_answer::kind::mismatch:
        ++c.violations;
        v.violations.push_back(describe_op(op) + ": " + op.text);
        continue;
      case node_answer::kind::hung:
        ++c.violations;
        v.violations.push_back(describe_op(op) + " hung: " + op.text);
        continue;
      case node_answer::kind::fail:
      case node_answer::kind::lost:
        break;
    }
    if (op.bound.count() > 0 && took > op.bound) {
      ++c.violations;
      v.violations.push_back(describe_op(op) + " failed after " + seconds_text(took)
                             + ", over its bound of " + seconds_text(op.bound) + ": "
                             + op.text);
    } else if (under_fault(op)) {
      ++c.survived;
    } else {
      ++c.violations;
      v.violations.push_back(describe_op(op) + " failed with no fault to explain it: "
                             + op.text);
    }
  }
  for (const auto& f : faults_) {
    ++v.faults_injected[f.kind];
    if (f.survived)
      ++v.faults_survived[f.kind];
  }
  v.violations.insert(v.violations.end(), violations_.begin(), violations_.end());
  v.known_aborts = known_aborts_;
  for (const auto& [key, samples] : rss_) {
    // The second half of an incarnation's life: past its warm-up.
    std::vector<double> t, b;
    for (size_t i = samples.size() / 2; i < samples.size(); ++i) {
      t.push_back(samples[i].at);
      b.push_back(static_cast<double>(samples[i].bytes));
    }
    if (t.size() < 2)
      continue;
    v.rss.push_back({key.first, key.second, t.back() - t.front(),
                     slope_mib_per_minute(t, b), samples.back().bytes});
  }
  return v;
}

double slope_mib_per_minute(const std::vector<double>& seconds,
                            const std::vector<double>& bytes) {
  auto n = static_cast<double>(seconds.size());
  if (seconds.size() < 2 || seconds.size() != bytes.size())
    return 0;
  double st = 0, sb = 0;
  for (size_t i = 0; i < seconds.size(); ++i) {
    st += seconds[i];
    sb += bytes[i];
  }
  double mt = st / n, mb = sb / n, num = 0, den = 0;
  for (size_t i = 0; i < seconds.size(); ++i) {
    num += (seconds[i] - mt) * (bytes[i] - mb);
    den += (seconds[i] - mt) * (seconds[i] - mt);
  }
  if (den == 0)
    return 0;
  return num / den * 60.0 / (1024.0 * 1024.0);
}

} // namespace ferry::soak
