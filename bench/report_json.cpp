#include "bench/report_json.hpp"

#include <cstdio>
#include <fstream>

namespace ferry::bench {

nlohmann::json report_json(const bench_options& opts, const nlohmann::json& machine,
                           const bench_report& report,
                           const std::vector<target_check>& targets) {
  nlohmann::json doc;
  doc["machine"] = machine;
  doc["options"] = {{"quick", opts.quick},
                    {"warmup", opts.warmup},
                    {"repeats", opts.repeats},
                    {"cold_repeats", opts.cold_repeats},
                    {"rtt_repeats", opts.rtt_repeats},
                    {"sizes", opts.sizes},
                    {"concurrency_sizes", opts.concurrency_sizes},
                    {"consumer_counts", opts.consumer_counts},
                    {"fanin_sizes", opts.fanin_sizes},
                    {"fanin_handles", opts.fanin_handles},
                    {"wall_seconds", report.wall_seconds}};
  doc["units"] = {{"bytes", "payload bytes per transfer (per consumer)"},
                  {"seconds", "one run: one transfer, or all consumers' transfers"},
                  {"gbps", "GB/s at the median run: 1e9 bytes per second, "
                           "aggregate over consumers"},
                  {"get_latency", "fan-in rows: each get of the timed runs, "
                                  "nearest-rank p50 and p99, in seconds"}};
  auto results = nlohmann::json::array();
  auto failed = nlohmann::json::array();
  for (const auto& p : report.points) {
    if (p.ok()) {
      nlohmann::json r{{"scenario", p.scenario},
                       {"bytes", p.bytes},
                       {"seconds_median", p.seconds.median},
                       {"seconds_min", p.seconds.min},
                       {"seconds_max", p.seconds.max},
                       {"gbps", p.gbps()},
                       {"runs", p.seconds.runs},
                       {"consumers", p.consumers}};
      if (p.op_seconds.ops > 0)
        r["get_latency"] = {{"p50_s", p.op_seconds.p50},
                            {"p99_s", p.op_seconds.p99},
                            {"max_s", p.op_seconds.max},
                            {"gets", p.op_seconds.ops}};
      results.push_back(std::move(r));
    } else {
      failed.push_back({{"scenario", p.scenario},
                        {"bytes", p.bytes},
                        {"consumers", p.consumers},
                        {"error", p.error.empty() ? "no runs" : p.error}});
    }
  }
  doc["results"] = std::move(results);
  doc["failed"] = std::move(failed);
  auto skipped = nlohmann::json::array();
  for (const auto& s : report.skipped)
    skipped.push_back({{"scenario", s.scenario}, {"reason", s.reason}});
  doc["skipped"] = std::move(skipped);
  doc["targets"] = targets_json(targets);
  return doc;
}

std::string write_json(const std::string& path, const nlohmann::json& doc) {
  auto tmp = path + ".partial";
  {
    std::ofstream out{tmp, std::ios::trunc};
    if (!out)
      return "cannot create '" + tmp + "'";
    out << doc.dump(2) << "\n";
    if (!out)
      return "cannot write '" + tmp + "'";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return "cannot rename '" + tmp + "' to '" + path + "'";
  return {};
}

} // namespace ferry::bench
