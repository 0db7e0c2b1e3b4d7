#include "apps/bench/targets.hpp"

#include <algorithm>
#include <set>

#include "apps/bench/bench_options.hpp"

namespace ferry::bench {

namespace {

// One target: numerator's throughput / denominator's throughput, either
// at one size (`from_bytes` false) or at every size >= bytes where both
// were measured (the worst one counts).
struct target_def {
  const char* numerator;
  const char* denominator;
  uint64_t bytes;
  bool from_bytes;
  double threshold;
};

// The throughput targets. Not encoded here yet: warm 4 KiB
// ferry_rdma_sm at most 2x caf_request_rtt (a latency ratio), and 16
// consumers' aggregate at least one consumer's.
const target_def targets[] = {
  {"ferry_get_into_pinned_sm", "memcpy", 16 * MiB, true, 0.8},
  {"ferry_rdma_sm", "ucx_get_raw_sm", 16 * MiB, true, 0.9},
  {"ferry_rdma_sm", "ferry_chunked", 4 * MiB, false, 5.0},
  {"ferry_chunked", "tcp_loopback", 64 * MiB, false, 0.6},
  {"ferry_chunked", "caf_inline", 4 * MiB, true, 1.0},
  {"ferry_messenger_staged", "ferry_messenger_inline", 64 * MiB, false, 10.0},
};

// Ferry rows and the limits printed next to them.
const std::pair<const char*, const char*> limit_pairs[] = {
  {"ferry_chunked", "tcp_loopback"},
  {"ferry_chunked_into", "tcp_loopback"},
  {"ferry_chunked", "caf_inline"},
  {"ferry_chunked_cold", "ferry_chunked"},
  {"caf_inline", "tcp_loopback"},
  {"tcp_loopback", "memcpy"},
  {"ucx_get_raw_sm", "memcpy"},
  {"ferry_rdma_sm", "ucx_get_raw_sm"},
  {"ferry_rdma_tcp", "ucx_get_raw_tcp"},
};

bool measured(const bench_report& r, const std::string& scenario) {
  return std::any_of(r.points.begin(), r.points.end(), [&](const point_result& p) {
    return p.scenario == scenario && p.ok();
  });
}

std::optional<double> ratio_at(const bench_report& r, const std::string& num,
                               const std::string& den, uint64_t bytes) {
  auto* a = r.find(num, bytes);
  auto* b = r.find(den, bytes);
  if (!a || !b || a->seconds.median <= 0)
    return std::nullopt;
  return b->seconds.median / a->seconds.median;
}

std::string fixed2(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", x);
  return buf;
}

} // namespace

std::vector<target_check> check_targets(const bench_report& report) {
  std::vector<target_check> out;
  for (const auto& t : targets) {
    target_check c;
    c.threshold = t.threshold;
    c.name = std::string{t.numerator} + " / " + t.denominator
             + (t.from_bytes ? " from " : " at ") + format_size(t.bytes)
             + " >= " + fixed2(t.threshold);
    std::set<uint64_t> sizes;
    for (const auto& p : report.points)
      if (p.scenario == t.numerator && p.ok()
          && (t.from_bytes ? p.bytes >= t.bytes : p.bytes == t.bytes))
        sizes.insert(p.bytes);
    for (auto s : sizes)
      if (auto r = ratio_at(report, t.numerator, t.denominator, s))
        c.ratio = c.ratio ? std::min(*c.ratio, *r) : *r;
    if (c.ratio) {
      c.verdict = *c.ratio >= t.threshold ? "pass" : "miss";
    } else {
      std::string missing = !measured(report, t.numerator) ? t.numerator
                            : !measured(report, t.denominator)
                              ? t.denominator
                              : std::string{"a common size"};
      c.verdict = "n/a: " + missing + " not measured";
    }
    out.push_back(std::move(c));
  }
  return out;
}

void print_targets(std::FILE* out, const std::vector<target_check>& checks) {
  std::fprintf(out, "\n== targets (throughput ratios) ==\n");
  for (const auto& c : checks) {
    if (c.ratio)
      std::fprintf(out, "%-64s %6.2f  %s\n", c.name.c_str(), *c.ratio,
                   c.verdict.c_str());
    else
      std::fprintf(out, "%-64s %6s  %s\n", c.name.c_str(), "-", c.verdict.c_str());
  }
  std::fflush(out);
}

void print_limit_ratios(std::FILE* out, const bench_report& report) {
  std::set<uint64_t> sizes;
  for (const auto& p : report.points)
    if (p.consumers == 1)
      sizes.insert(p.bytes);
  bool header = false;
  for (const auto& [num, den] : limit_pairs) {
    std::string line;
    for (auto s : sizes)
      if (auto r = ratio_at(report, num, den, s))
        line += "  " + format_size(s) + ": " + fixed2(*r);
    if (line.empty())
      continue;
    if (!header) {
      std::fprintf(out, "\n== throughput ratios to the limits, per size ==\n");
      header = true;
    }
    std::fprintf(out, "%-38s%s\n", (std::string{num} + " / " + den).c_str(),
                 line.c_str());
  }
  std::fflush(out);
}

nlohmann::json targets_json(const std::vector<target_check>& checks) {
  auto arr = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json j;
    j["name"] = c.name;
    j["ratio"] = c.ratio ? nlohmann::json(*c.ratio) : nlohmann::json(nullptr);
    j["threshold"] = c.threshold;
    j["verdict"] = c.verdict;
    arr.push_back(std::move(j));
  }
  return arr;
}

} // namespace ferry::bench
