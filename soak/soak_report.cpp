#include "soak/soak_report.hpp"

#include <cstdio>

namespace ferry::soak {

std::string replay_command(const soak_options& o) {
  std::string cmd = "ferry soak --seed " + std::to_string(o.seed) + " --nodes "
                    + std::to_string(o.nodes) + " --duration "
                    + std::to_string(o.duration.count()) + "s --concurrency "
                    + std::to_string(o.concurrency) + " --max-size "
                    + std::to_string(o.max_size) + " --fault-interval-ms "
                    + std::to_string(o.fault_interval.count());
  if (o.operations > 0)
    cmd += " --operations " + std::to_string(o.operations);
  return cmd;
}

nlohmann::json report_json(const soak_summary& s) {
  const auto& v = s.verdict;
  nlohmann::json j;
  j["seed"] = s.opts->seed;
  j["nodes"] = s.opts->nodes;
  j["seconds"] = s.seconds;
  j["operations"] = v.operations;
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [kind, c] : v.ops)
    ops[kind] = {{"ok", c.ok}, {"survived", c.survived}, {"violations", c.violations},
                 {"verified_bytes", c.bytes}};
  j["by_operation"] = std::move(ops);
  nlohmann::json faults = nlohmann::json::object();
  for (const auto& [kind, n] : v.faults_injected) {
    auto survived = v.faults_survived.count(kind) ? v.faults_survived.at(kind) : 0;
    faults[kind] = {{"injected", n}, {"survived", survived}};
  }
  j["faults"] = std::move(faults);
  auto plan = nlohmann::json::array();
  for (const auto& f : s.plan)
    plan.push_back({{"at_ms", f.at.count()}, {"kind", to_string(f.kind)}});
  j["fault_plan"] = std::move(plan);
  auto rss = nlohmann::json::array();
  for (const auto& r : v.rss)
    rss.push_back({{"node", r.node}, {"incarnation", r.incarnation}, {"span_s", r.seconds},
                   {"mib_per_minute", r.mib_per_minute}, {"last_rss_bytes", r.last_bytes}});
  j["rss"] = std::move(rss);
  j["node_state"] = s.nodes;
  j["violations"] = v.violations;
  j["known_library_aborts"] = v.known_aborts;
  j["passed"] = v.violations.empty();
  j["replay"] = replay_command(*s.opts);
  j["logs"] = s.log_dir;
  return j;
}

void print_report(const soak_summary& s) {
  const auto& v = s.verdict;
  std::printf("\nferry soak: seed %llu, %d nodes, %.0f s, %llu operations\n",
              static_cast<unsigned long long>(s.opts->seed), s.opts->nodes, s.seconds,
              static_cast<unsigned long long>(v.operations));
  std::printf("%-28s %8s %9s %11s %14s\n", "operation", "ok", "survived", "violations",
              "verified MiB");
  for (const auto& [kind, c] : v.ops)
    std::printf("%-28s %8llu %9llu %11llu %14.0f\n", kind.c_str(),
                static_cast<unsigned long long>(c.ok), static_cast<unsigned long long>(c.survived),
                static_cast<unsigned long long>(c.violations), c.bytes / 1048576.0);
  std::printf("%-28s %8s %9s\n", "fault", "injected", "survived");
  for (const auto& [kind, n] : v.faults_injected) {
    auto survived = v.faults_survived.count(kind) ? v.faults_survived.at(kind) : 0;
    std::printf("%-28s %8llu %9llu\n", kind.c_str(), static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(survived));
  }
  std::printf("%-6s %-12s %10s %14s %10s\n", "node", "incarnation", "RSS MiB", "slope MiB/min",
              "over s");
  for (const auto& r : v.rss)
    std::printf("%-6d %-12d %10.0f %14.2f %10.0f\n", r.node, r.incarnation,
                r.last_bytes / 1048576.0, r.mib_per_minute, r.seconds);
  if (!v.known_aborts.empty()) {
    std::printf("known library aborts, restarted like a kill and not violations "
                "(docs/known-issues.md): %zu\n",
                v.known_aborts.size());
    for (const auto& a : v.known_aborts)
      std::printf("  - %s\n", a.c_str());
  }
  if (v.violations.empty()) {
    std::printf("passed: every completed operation's bytes verified, every failure explained "
                "by a fault within its bound, every node back at its idle baseline\n");
  } else {
    std::printf("FAILED: %zu violation(s)\n", v.violations.size());
    constexpr size_t shown = 20; // all of them are in the JSON report
    for (size_t i = 0; i < v.violations.size() && i < shown; ++i)
      std::printf("  - %s\n", v.violations[i].c_str());
    if (v.violations.size() > shown)
      std::printf("  ... and %zu more (--json lists them all)\n", v.violations.size() - shown);
    // What each node's control channel saw (frames in flight, failed or
    // dropped): where a get went slow, the first thing to look at.
    for (const auto& n : s.nodes) {
      const auto& stat = n.value("stat", nlohmann::json::object());
      if (stat.is_object() && stat.contains("control_channel"))
        std::printf("node %d control channel: %s\n", n.value("node", -1),
                    stat["control_channel"].dump().c_str());
    }
  }
  std::printf("node logs: %s\nreplay: %s\n", s.log_dir.c_str(), replay_command(*s.opts).c_str());
}

} // namespace ferry::soak
