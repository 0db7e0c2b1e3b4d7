// `ferry bench` as a user runs it: the quick run writes a JSON with every
// expected (scenario, size, consumers) point, each with positive, ordered
// numbers and verified bytes (a failed point fails the command; an RDMA row
// whose get fell back to chunks is a failed point). With UCX built, the
// RDMA and messenger rows must be measured in full; without, they are
// listed as skipped with what they need. Speed is never asserted. --plot draws
// PNGs when gnuplot is there. The payload check every row verifies with is
// tested on its own.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/payload.hpp"
#include "bench/scenarios.hpp"
#include "bench/stats.hpp"
#include "staging/fake_cuda.hpp"
#include "tests/cluster/test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

const std::vector<uint64_t> quick_sizes{4 * KiB, 4 * MiB, 16 * MiB, 64 * MiB};
const std::vector<uint64_t> quick_concurrency_sizes{4 * MiB, 16 * MiB};
const std::vector<int> consumer_counts{1, 4, 16};

// The RDMA rows (and the messenger's, which run over shared memory):
// measured with UCX, skipped (needs UCX) without.
const std::vector<std::string> rdma_rows{"ferry_rdma_sm",
                                         "ferry_rdma_sm_given_back",
                                         "ferry_rdma_sm_cold",
                                         "ferry_rdma_tcp",
                                         "ferry_rdma_tcp_given_back",
                                         "ferry_rdma_tcp_cold",
                                         "ferry_pinned_tcp",
                                         "ferry_get_into_pinned_sm",
                                         "ferry_messenger_staged",
                                         "ferry_messenger_inline"};

json read_json(const std::string& path) {
  std::ifstream in{path};
  return json::parse(in, nullptr, false);
}

const json* find_point(const json& doc, const std::string& scenario, uint64_t bytes,
                       int consumers) {
  for (const auto& r : doc["results"])
    if (r.value("scenario", "") == scenario && r.value("bytes", uint64_t{0}) == bytes
        && r.value("consumers", 0) == consumers)
      return &r;
  return nullptr;
}

[[maybe_unused]] bool is_skipped(const json& doc, const std::string& scenario) {
  for (const auto& s : doc["skipped"])
    if (s.value("scenario", "") == scenario)
      return s.value("reason", "").rfind("needs ", 0) == 0;
  return false;
}

::testing::AssertionResult point_ok(const json& doc, const std::string& scenario,
                                    uint64_t bytes, int consumers, int min_runs) {
  auto* p = find_point(doc, scenario, bytes, consumers);
  if (p == nullptr)
    return ::testing::AssertionFailure()
           << scenario << " " << bytes << " B x" << consumers << " is missing";
  auto med = p->value("seconds_median", 0.0);
  auto lo = p->value("seconds_min", 0.0);
  auto hi = p->value("seconds_max", 0.0);
  auto gbps = p->value("gbps", 0.0);
  auto runs = p->value("runs", 0);
  if (!(lo > 0 && lo <= med && med <= hi && gbps > 0 && runs >= min_runs))
    return ::testing::AssertionFailure() << scenario << " " << bytes << " B x"
                                         << consumers << ": " << p->dump();
  return ::testing::AssertionSuccess();
}

TEST(BenchStats, PercentilesAreNearestRank) {
  std::vector<double> s;
  for (int i = 100; i >= 1; --i)
    s.push_back(i * 1e-3); // 1 ms .. 100 ms, in any order
  auto l = ferry::bench::percentiles(s);
  EXPECT_EQ(l.ops, 100u);
  EXPECT_DOUBLE_EQ(l.p50, 50e-3);
  EXPECT_DOUBLE_EQ(l.p99, 99e-3);
  EXPECT_DOUBLE_EQ(l.max, 100e-3);
  auto one = ferry::bench::percentiles({7.0});
  EXPECT_DOUBLE_EQ(one.p50, 7.0);
  EXPECT_DOUBLE_EQ(one.p99, 7.0);
  EXPECT_EQ(ferry::bench::percentiles({}).ops, 0u);
}

TEST(BenchPayload, CheckAcceptsThePatternAndNamesWhatIsWrong) {
  const size_t n = 4096 + 7;
  std::vector<char> buf(n);
  ferry::bench::fill_payload(buf.data(), n);
  EXPECT_EQ(ferry::bench::check_payload(buf.data(), n, n), "");
  EXPECT_EQ(ferry::bench::check_payload(buf.data(), n - 1, n),
            "got 4102 bytes, expected 4103");
  std::swap(buf[8], buf[16]); // same bytes, wrong places
  EXPECT_EQ(ferry::bench::check_payload(buf.data(), n, n), "checksum mismatch");
}

// The cuda rows need a GPU to be measured; on the fake their runners still
// move and verify every byte, and a failed copy fails the run.
TEST(BenchCuda, TheCudaRunnersMoveAndVerifyTheBytesOnTheFake) {
  auto opts = ferry::bench::default_options(true);
  const uint64_t size = 4 * ferry::bench::MiB + 3;
  for (bool to_host : {true, false}) {
    for (uint64_t chunk : {uint64_t{0}, uint64_t{1} << 20}) {
      auto fake = std::make_shared<ferry::staging::fake_cuda>();
      auto r = ferry::bench::make_cuda_runner(opts, to_host, chunk, fake);
      ASSERT_EQ(r->start(), "");
      ASSERT_EQ(r->prepare(size), "");
      auto ok = r->run(size);
      EXPECT_EQ(ok.error, "") << to_host << " " << chunk;
      EXPECT_GT(ok.seconds, 0);
      fake->fail(to_host ? "copy_to_host" : "copy_to_device");
      EXPECT_NE(r->run(size).error, "") << "a failed copy must fail the run";
      r->finish(size);
      r->stop();
      auto live = fake->live();
      EXPECT_EQ(live.allocations + live.registrations, 0u) << "the runner leaked";
    }
  }
}

TEST(BenchQuick, WritesEveryScenarioAndSize) {
  auto dir = test::temp_dir();
  auto path = dir + "/bench.json";
  auto r = test::run_ferry({"bench", "--quick", "--json", path}, 280s);
  ASSERT_EQ(r.exit_code, 0) << r.out << "\n" << r.err;
  // Progress and the final table went to stdout.
  EXPECT_NE(r.out.find("== results"), std::string::npos);
  EXPECT_NE(r.out.find("== targets"), std::string::npos);

  auto doc = read_json(path);
  ASSERT_FALSE(doc.is_discarded()) << "not JSON: " << path;
  ASSERT_TRUE(doc["machine"].is_object());
  EXPECT_GT(doc["machine"].value("cores", 0), 0);
  EXPECT_FALSE(doc["machine"].value("cpu", "").empty());
  ASSERT_TRUE(doc["results"].is_array());
  EXPECT_TRUE(doc["failed"].empty()) << doc["failed"].dump(2);

  std::vector<std::string> always{"memcpy",        "tcp_loopback",
                                  "caf_inline",    "ferry_chunked",
                                  "ferry_chunked_cold", "ferry_chunked_into"};
  std::vector<std::string> concurrent{"ferry_chunked_concurrent"};
#ifdef FERRY_BENCH_WITH_UCX
  always.push_back("ucx_get_raw_sm");
  always.push_back("ucx_get_raw_tcp");
  always.insert(always.end(), rdma_rows.begin(), rdma_rows.end());
  concurrent.push_back("ferry_rdma_sm_concurrent");
#else
  EXPECT_TRUE(is_skipped(doc, "ucx_get_raw_sm"));
  EXPECT_TRUE(is_skipped(doc, "ucx_get_raw_tcp"));
  for (const auto& s : rdma_rows)
    EXPECT_TRUE(is_skipped(doc, s)) << s;
  EXPECT_TRUE(is_skipped(doc, "ferry_rdma_sm_concurrent"));
#endif
  for (const auto& s : always)
    for (auto bytes : quick_sizes)
      EXPECT_TRUE(point_ok(doc, s, bytes, 1, 3));
  EXPECT_TRUE(point_ok(doc, "caf_request_rtt", 8, 1, 100));
  // What a hop between threads costs here: asleep, spinning, to a CAF worker.
  for (const char* s : {"thread_wake_rtt", "thread_spin_rtt", "caf_local_rtt"})
    EXPECT_TRUE(point_ok(doc, s, 8, 1, 100)) << s;
#ifdef FERRY_BENCH_WITH_UCX
  // UCX's own round trip on both transports: the control channel's floor.
  EXPECT_TRUE(point_ok(doc, "ucx_am_rtt_sm", 8, 1, 100));
  EXPECT_TRUE(point_ok(doc, "ucx_am_rtt_tcp", 8, 1, 100));
#else
  EXPECT_TRUE(is_skipped(doc, "ucx_am_rtt_sm"));
  EXPECT_TRUE(is_skipped(doc, "ucx_am_rtt_tcp"));
#endif
  for (const auto& s : concurrent)
    for (int n : consumer_counts)
      for (auto bytes : quick_concurrency_sizes)
        EXPECT_TRUE(point_ok(doc, s, bytes, n, 3));
  // Fan-in: 64 consumers, each get of every timed run in the percentiles
  // (512 handles a run in a quick run), ordered and positive.
  std::vector<std::string> fanin{"fanin_64_chunked"};
#ifdef FERRY_BENCH_WITH_UCX
  fanin.push_back("fanin_64_rdma_sm");
#else
  EXPECT_TRUE(is_skipped(doc, "fanin_64_rdma_sm"));
#endif
  for (const auto& s : fanin) {
    ASSERT_TRUE(point_ok(doc, s, 64 * KiB, 64, 3));
    const auto& p = *find_point(doc, s, 64 * KiB, 64);
    ASSERT_TRUE(p.contains("get_latency")) << p.dump();
    const auto& l = p["get_latency"];
    EXPECT_EQ(l.value("gets", 0), 512 * p.value("runs", 0)) << p.dump();
    EXPECT_GT(l.value("p50_s", 0.0), 0.0) << p.dump();
    EXPECT_LE(l.value("p50_s", 0.0), l.value("p99_s", 0.0)) << p.dump();
    EXPECT_LE(l.value("p99_s", 0.0), l.value("max_s", 0.0)) << p.dump();
  }

  // The targets are judged where both sides exist.
  ASSERT_TRUE(doc["targets"].is_array());
  ASSERT_FALSE(doc["targets"].empty());
  for (const auto& t : doc["targets"]) {
    auto verdict = t.value("verdict", "");
    EXPECT_TRUE(verdict == "pass" || verdict == "miss" || verdict.rfind("n/a", 0) == 0)
      << t.dump();
    auto name = t.value("name", "");
    if (name.rfind("ferry_chunked / tcp_loopback", 0) == 0
        || name.rfind("ferry_chunked_concurrent x16", 0) == 0) {
      EXPECT_TRUE(t["ratio"].is_number()) << t.dump();
    }
#ifdef FERRY_BENCH_WITH_UCX
    // Every RDMA target has both sides in a quick run.
    if (name.find("ferry_rdma_sm") != std::string::npos
        || name.find("ferry_rdma_tcp") != std::string::npos
        || name.find("ferry_get_into_pinned_sm") != std::string::npos) {
      EXPECT_TRUE(t["ratio"].is_number()) << t.dump();
    }
#endif
  }
}

TEST(BenchQuick, RejectsAnUnknownScenario) {
  auto r = test::run_ferry({"bench", "--quick", "--scenarios", "no_such_row"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no_such_row"), std::string::npos) << r.err;
}

TEST(BenchPlots, DrawsThroughputAndLatency) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "gnuplot is not installed";
  auto dir = test::temp_dir();
  auto r = test::run_ferry({"bench", "--quick", "--scenarios", "memcpy,tcp_loopback",
                            "--plot", dir + "/plots"},
                           120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << "\n" << r.err;
  for (const char* png : {"throughput.png", "latency.png"}) {
    struct stat st{};
    ASSERT_EQ(::stat((dir + "/plots/" + png).c_str(), &st), 0) << png << "\n" << r.err;
    EXPECT_GT(st.st_size, 1000) << png;
  }
}

} // namespace
} // namespace ferry
