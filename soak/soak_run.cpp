#include "soak/soak_run.hpp"

#include <sys/wait.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "soak/fault_runner.hpp"
#include "soak/known_aborts.hpp"
#include "soak/soak_cluster.hpp"
#include "soak/soak_report.hpp"
#include "soak/traffic.hpp"

namespace ferry::soak {

namespace {

using namespace std::chrono_literals;

double seconds_since(soak_clock::time_point t0) {
  return std::chrono::duration<double>(soak_clock::now() - t0).count();
}

/// Empty when the node holds nothing a finished run leaves behind, else
/// what it still holds. Not counted: GETs this node abandoned and the
/// registered bytes of their destinations (docs/known-issues.md: a GET
/// whose owner died over shared memory stays with the UCX engine until
/// this node stops); the report shows them per node.
std::string held_beyond_idle(const nlohmann::json& s, double idle_registered) {
  std::string held;
  auto add = [&](const std::string& what, double n) {
    if (n != 0)
      held += (held.empty() ? "" : ", ") + what + " " + std::to_string(static_cast<int64_t>(n));
  };
  const auto& o = s["owner"];
  add("slots", o.value("slots", 0.0));
  add("staged bytes", o.value("staged_bytes", 0.0));
  add("leases", o.value("leases", 0.0));
  add("transfers", o.value("transfers", 0.0));
  add("quarantined bytes", o.contains("quarantine") ? o["quarantine"].value("bytes", 0.0) : 0.0);
  add("active staging chunks", s.value("staging_chunks_active", 0.0));
  add("kept GET destination bytes", s.value("warm_destination_bytes", 0.0));
  add("messenger fetches", s.value("fetches_in_flight", 0.0));
  add("messenger streams", s.value("streams", 0.0));
  auto registered = s.value("registered_bytes", 0.0) - s.value("abandoned_bytes", 0.0);
  if (registered > idle_registered)
    add("registered bytes over the idle " + std::to_string(static_cast<int64_t>(idle_registered)),
        registered - idle_registered);
  return held;
}

/// A node that exited with no fault on it (it crashed) is a violation,
/// unless it died inside a library in a known way (known_aborts.hpp); it
/// is restarted so the run goes on finding more.
void restart_crashed(soak_cluster& cluster, run_ledger& ledger) {
  for (int slot : cluster.exited_unexpectedly()) {
    auto link = cluster.take_down(slot);
    if (!link)
      continue;
    // The crash is the violation; the operations it failed (since the last
    // look, a second ago) and those on its next incarnation's rejoin are
    // its consequences, not more violations.
    auto from = soak_clock::now() - 2s;
    auto status = link->wait_exit(5s);
    std::string what = "node " + std::to_string(slot) + " (incarnation "
                       + std::to_string(cluster.incarnation(slot)) + ") exited on its own"
                       + (status ? ", wait status " + std::to_string(*status) : "");
    int signal = status && WIFSIGNALED(*status) ? WTERMSIG(*status) : 0;
    if (!ledger.add_node_death(what, link->log_tail(death_log_chars), signal))
      std::fprintf(stderr, "soak: %s inside a library, a known abort (docs/known-issues.md): "
                           "restarted, not counted as a violation\n",
                   what.c_str());
    if (auto err = cluster.restart(slot); !err.empty())
      ledger.add_violation("node " + std::to_string(slot) + " did not restart: " + err);
    ledger.add_fault_window(slot, from, soak_clock::now() + fault_grace);
  }
}

} // namespace

int run_soak(soak_options opts) {
  if (opts.seed == 0)
    opts.seed = static_cast<uint64_t>(soak_clock::now().time_since_epoch().count()) | 1;
  std::signal(SIGPIPE, SIG_IGN); // a node killed mid-command must not take the driver
  soak_cluster cluster{opts};
  std::fprintf(stderr, "ferry soak: seed %llu, %d nodes, %lld s, logs in %s\n",
               static_cast<unsigned long long>(opts.seed), opts.nodes,
               static_cast<long long>(opts.duration.count()), cluster.log_dir().c_str());
  if (auto err = cluster.start(); !err.empty()) {
    std::fprintf(stderr, "ferry soak: the nodes did not start: %s\n", err.c_str());
    return 2;
  }
  run_ledger ledger;
  traffic ops{cluster, ledger, opts};
  fault_runner faults{cluster, ledger, ops, opts};
  auto plan = make_fault_plan(opts.seed ^ 0xfa17'5eedULL,
                              std::chrono::duration_cast<std::chrono::milliseconds>(opts.duration),
                              opts.fault_interval);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> started{0};
  auto t0 = soak_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < opts.concurrency; ++w)
    workers.emplace_back([&, w] {
      std::mt19937_64 rng{opts.seed + 1 + static_cast<uint64_t>(w)};
      while (!stop) {
        if (opts.operations > 0 && started.fetch_add(1) >= opts.operations)
          break;
        ops.run_one(rng);
      }
    });
  std::thread fault_thread{[&] {
    for (const auto& f : plan) {
      while (!stop && soak_clock::now() < t0 + f.at)
        std::this_thread::sleep_for(20ms);
      if (stop)
        break;
      faults.run(f);
    }
  }};
  // The run: until the duration or the count; the memory sampled every second.
  auto next_line = t0 + 5s;
  while (seconds_since(t0) < static_cast<double>(opts.duration.count())
         && !(opts.operations > 0 && started >= opts.operations)) {
    std::this_thread::sleep_for(1s);
    cluster.sample_rss(ledger, seconds_since(t0));
    restart_crashed(cluster, ledger);
    if (opts.progress && soak_clock::now() >= next_line) {
      next_line += 5s;
      int up = 0;
      for (int i = 0; i < cluster.size(); ++i)
        up += cluster.up(i) != nullptr;
      std::fprintf(stderr, "soak %4.0f/%lld s  operations %llu  faults %llu  violations %llu  nodes up %d/%d\n",
                   seconds_since(t0), static_cast<long long>(opts.duration.count()),
                   static_cast<unsigned long long>(ledger.operations()),
                   static_cast<unsigned long long>(ledger.faults()),
                   static_cast<unsigned long long>(ledger.violations_so_far()), up, cluster.size());
    }
  }
  stop = true;
  if (opts.progress)
    std::fprintf(stderr, "soak: traffic stops; waiting for the operations in flight\n");
  for (auto& w : workers)
    w.join();
  fault_thread.join();
  auto seconds = seconds_since(t0);

  // Every node back at its idle baseline, within the settle bound.
  if (opts.progress)
    std::fprintf(stderr, "soak: checking every node is back at its idle baseline\n");
  soak_summary summary;
  summary.opts = &opts;
  summary.seconds = seconds;
  summary.plan = plan;
  summary.log_dir = cluster.log_dir();
  for (int i = 0; i < cluster.size(); ++i) {
    if (!cluster.up(i)) {
      ledger.add_violation("node " + std::to_string(i) + " is down at the end of the run");
      continue;
    }
    auto until = soak_clock::now() + opts.settle;
    std::string held, err;
    std::optional<nlohmann::json> s;
    do {
      s = cluster.stat(i, &err);
      held = s ? held_beyond_idle(*s, cluster.idle_registered(i)) : err;
      if (held.empty())
        break;
      std::this_thread::sleep_for(100ms);
    } while (soak_clock::now() < until);
    if (!held.empty()) {
      // What keeps the slots left (refs, leases, addressed to, age).
      if (s && (*s)["owner"].value("slots", 0) > 0 && (*s)["owner"].contains("oldest_slots"))
        held += "; oldest slots " + (*s)["owner"]["oldest_slots"].dump();
      // What else holds registered memory (a block keeps its whole arena).
      auto count = [&](const char* key) {
        return std::to_string(static_cast<int64_t>(s ? s->value(key, 0.0) : 0.0));
      };
      held += "; live regions " + count("live_regions") + ", abandoned GETs "
              + count("abandoned_gets") + " (" + count("abandoned_bytes") + " bytes)";
      if (s && s->contains("pool"))
        held += ", arena pool " + (*s)["pool"].dump();
      ledger.add_violation("node " + std::to_string(i) + " is not back at its idle baseline "
                           + std::to_string(opts.settle.count()) + " s after the run: " + held);
    }
    const auto& role = cluster.role(i);
    summary.nodes.push_back({{"node", i},
                             {"incarnations", cluster.incarnation(i)},
                             {"ucx", role.tcp_only ? "tcp" : "sm,tcp"},
                             {"kill_switch", role.kill_switch},
                             {"control_channel", role.caf_control ? "caf" : "auto"},
                             {"small_budget", role.small_budget},
                             {"stat", s ? *s : nlohmann::json{}}});
  }
  summary.verdict = ledger.judge();
  for (const auto& r : summary.verdict.rss)
    if (r.seconds >= opts.rss_slope_min_seconds && r.mib_per_minute > opts.max_rss_slope)
      summary.verdict.violations.push_back(
        "node " + std::to_string(r.node) + " (incarnation " + std::to_string(r.incarnation)
        + ") grew " + std::to_string(r.mib_per_minute) + " MiB/min over "
        + std::to_string(static_cast<int>(r.seconds)) + " s, over the "
        + std::to_string(opts.max_rss_slope) + " allowed");
  cluster.stop();
  if (opts.json)
    std::printf("%s\n", report_json(summary).dump(2).c_str());
  else
    print_report(summary);
  if (!summary.verdict.violations.empty())
    std::fprintf(stderr, "ferry soak: %zu violation(s); replay with: %s\n",
                 summary.verdict.violations.size(), replay_command(opts).c_str());
  return summary.verdict.violations.empty() ? 0 : 1;
}

} // namespace ferry::soak
