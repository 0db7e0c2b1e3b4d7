#include "bench/report_table.hpp"

#include "bench/bench_options.hpp"

namespace ferry::bench {

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
  else if (s >= 1e-6)
    std::snprintf(buf, sizeof(buf), "%.2f us", s * 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.0f ns", s * 1e9);
  return buf;
}

void print_header(std::FILE* out) {
  std::fprintf(out, "%-26s %9s %4s %11s %11s %11s %8s %5s\n", "scenario", "size",
               "cons", "median", "min", "max", "GB/s", "runs");
  std::fflush(out);
}

void print_point(std::FILE* out, const point_result& p) {
  if (!p.ok()) {
    std::fprintf(out, "%-26s %9s %4d  FAILED: %s\n", p.scenario.c_str(),
                 format_size(p.bytes).c_str(), p.consumers,
                 p.error.empty() ? "no runs" : p.error.c_str());
  } else {
    std::fprintf(out, "%-26s %9s %4d %11s %11s %11s %8.3f %5d\n",
                 p.scenario.c_str(), format_size(p.bytes).c_str(), p.consumers,
                 format_seconds(p.seconds.median).c_str(),
                 format_seconds(p.seconds.min).c_str(),
                 format_seconds(p.seconds.max).c_str(), p.gbps(), p.seconds.runs);
    if (p.op_seconds.ops > 0)
      std::fprintf(out, "%-26s   each get of %llu: p50 %s, p99 %s, max %s\n", "",
                   static_cast<unsigned long long>(p.op_seconds.ops),
                   format_seconds(p.op_seconds.p50).c_str(),
                   format_seconds(p.op_seconds.p99).c_str(),
                   format_seconds(p.op_seconds.max).c_str());
  }
  std::fflush(out);
}

void print_skipped(std::FILE* out, const skipped_scenario& s) {
  std::fprintf(out, "%-26s  skipped: %s\n", s.scenario.c_str(), s.reason.c_str());
  std::fflush(out);
}

void print_table(std::FILE* out, const bench_report& report) {
  std::fprintf(out, "\n== results (median of runs; GB/s = 1e9 bytes/s, "
                    "aggregate over consumers) ==\n");
  print_header(out);
  for (const auto& p : report.points)
    print_point(out, p);
  if (!report.skipped.empty()) {
    std::fprintf(out, "\n== not measured ==\n");
    for (const auto& s : report.skipped)
      print_skipped(out, s);
  }
  std::fflush(out);
}

} // namespace ferry::bench
