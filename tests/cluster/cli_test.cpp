// The `ferry` command against real nodes: put, get, stat, job.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "protocol/data_handle.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using test::node_process;
using test::run_ferry;

namespace {

void write_file(const std::string& path, const byte_buffer& bytes) {
  std::ofstream out{path, std::ios::binary};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

byte_buffer read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return byte_buffer{std::istreambuf_iterator<char>{in}, {}};
}

} // namespace

TEST(ClusterCli, PutGetStat) {
  node_process n;
  auto dir = test::temp_dir();
  auto bytes = test::payload(5 * 1024 * 1024 + 11);
  write_file(dir + "/in", bytes);
  auto put = run_ferry({"put", "--node", n.endpoint(), dir + "/in"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto text = put.out.substr(0, put.out.find('\n'));
  auto h = parse_data_handle(text);
  ASSERT_TRUE(h) << put.out;
  EXPECT_EQ(h->owner(), n.worker_id());

  auto stat = run_ferry({"stat", "--node", n.endpoint(), "--json"});
  ASSERT_EQ(stat.exit_code, 0) << stat.err;
  auto j = nlohmann::json::parse(stat.out);
  EXPECT_EQ(j["owner"]["slots"], 1);
  EXPECT_EQ(j["owner"]["staged_bytes"], bytes.size());
  auto human = run_ferry({"stat", "--node", n.endpoint()});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("slots         1"), std::string::npos) << human.out;

  auto get = run_ferry({"get", "--node", n.endpoint(), "--handle", text, "-o",
                        dir + "/out"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(read_file(dir + "/out"), bytes);

  // Released: the slot is gone, and a second get is a clear error.
  stat = run_ferry({"stat", "--node", n.endpoint(), "--json"});
  EXPECT_EQ(nlohmann::json::parse(stat.out)["owner"]["slots"], 0);
  auto again = run_ferry({"get", "--node", n.endpoint(), "--handle", text, "-o",
                          dir + "/out2"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("unknown_handle"), std::string::npos) << again.err;
  EXPECT_FALSE(std::ifstream{dir + "/out2"}.good()); // nothing half-written
}

TEST(ClusterCli, BadInputGetsClearErrors) {
  node_process n;
  auto bad_handle = run_ferry({"get", "--node", n.endpoint(), "--handle", "xyz",
                               "-o", "/tmp/never"});
  EXPECT_EQ(bad_handle.exit_code, 2);
  EXPECT_NE(bad_handle.err.find("is not a handle"), std::string::npos);
  auto no_file = run_ferry({"put", "--node", n.endpoint(), "/nonexistent/file"});
  EXPECT_EQ(no_file.exit_code, 1);
  EXPECT_NE(no_file.err.find("cannot open"), std::string::npos);
  auto no_node = run_ferry({"stat", "--node", "127.0.0.1:1"});
  EXPECT_EQ(no_node.exit_code, 1);
  EXPECT_NE(no_node.err.find("cannot connect"), std::string::npos) << no_node.err;
  auto bad_endpoint = run_ferry({"stat", "--node", "localhost"});
  EXPECT_EQ(bad_endpoint.exit_code, 1);
  EXPECT_NE(bad_endpoint.err.find("HOST:PORT"), std::string::npos);
}

TEST(ClusterCli, VersionNamesFerryCafAndUcx) {
  auto v = run_ferry({"--version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out.rfind("ferry 0.", 0), 0u) << v.out;
  EXPECT_NE(v.out.find("CAF 0.17.6"), std::string::npos) << v.out;
#ifdef FERRY_WITH_UCX
  EXPECT_NE(v.out.find("UCX 1.13"), std::string::npos) << v.out;
#endif
}

TEST(ClusterJob, ThreeNodeJobVerifiesEveryShard) {
  node_process a, b, c;
  auto dir = test::temp_dir();
  auto job = run_ferry({"job", "--nodes",
                        a.endpoint() + "," + b.endpoint() + "," + c.endpoint(),
                        "--mib", "24", "--summary-json", dir + "/summary.json"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("result              OK"), std::string::npos) << job.out;
  std::ifstream in{dir + "/summary.json"};
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["nodes"], 3);
  EXPECT_EQ(j["verified"], j["shards"]);
  EXPECT_EQ(j["shards"], 6);
  // Every node ends empty: inputs were released by workers, results by us.
  for (auto* n : {&a, &b, &c}) {
    auto stat = run_ferry({"stat", "--node", n->endpoint(), "--json"});
    EXPECT_EQ(nlohmann::json::parse(stat.out)["owner"]["slots"], 0);
  }
}

TEST(ClusterShutdown, SigtermWithPinnedSlotsExitsZeroWithNoRegisteredBytes) {
  node_process n{{"--metrics-port", "0", "--shutdown-timeout-ms", "5000"}};
  auto dir = test::temp_dir();
  auto bytes = test::payload(2 * 1024 * 1024 + 5);
  write_file(dir + "/in", bytes);
  auto put = run_ferry({"put", "--pinned", "--node", n.endpoint(), dir + "/in"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto registered = test::series_value(test::http_get(n.metrics_port(), "/metrics").body,
                                       "ferry_rdma_registered_bytes");
  ASSERT_GT(registered, 0) << "the pinned slot is in registered memory";
  EXPECT_EQ(n.stop(), 0); // SIGTERM: the graceful shutdown, exit 0
  auto log = n.log();
  EXPECT_NE(log.find("pinned slots copied to plain memory"), std::string::npos) << log;
  EXPECT_NE(log.find("shutdown: registered bytes at exit: 0"), std::string::npos) << log;
}
