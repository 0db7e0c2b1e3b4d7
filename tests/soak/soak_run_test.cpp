// `ferry soak` end to end, as a user runs it: a short seeded run with
// faults passes and reports every check; a node planted to corrupt what it
// gets, or to stage a payload nobody frees, fails the run with the
// violation named and the command that replays it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cluster/test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json run_soak(std::vector<std::string> args, int expect_code, std::string* err = nullptr) {
  std::vector<std::string> all{"soak", "--json", "--max-size", "4M", "--concurrency", "3"};
  all.insert(all.end(), args.begin(), args.end());
  auto r = test::run_ferry(all, 240s);
  EXPECT_EQ(r.exit_code, expect_code) << r.err.substr(r.err.size() > 3000 ? r.err.size() - 3000 : 0);
  if (err)
    *err = r.err;
  auto j = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out.substr(0, 2000);
  return j.is_object() ? j : json::object();
}

TEST(SoakRun, AShortSeededRunWithFaultsLosesAndLeaksNothing) {
  auto j = run_soak({"--seed", "11", "--duration", "24", "--fault-interval-ms", "3000"}, 0);
  EXPECT_TRUE(j.value("passed", false)) << j["violations"].dump(2);
  EXPECT_EQ(j.value("seed", 0), 11);
  EXPECT_TRUE(j["violations"].empty());
  // Traffic of every kind ran and its bytes were verified.
  for (auto kind : {"get_plain", "get_pinned", "call", "stream"}) {
    ASSERT_TRUE(j["by_operation"].contains(kind)) << kind;
    EXPECT_GT(j["by_operation"][kind].value("ok", 0), 0) << kind;
    EXPECT_GT(j["by_operation"][kind].value("verified_bytes", uint64_t{0}), 0u) << kind;
  }
  // Faults were injected and survived; killed nodes came back.
  uint64_t injected = 0;
  for (auto& [kind, f] : j["faults"].items()) {
    injected += f.value("injected", 0);
    EXPECT_EQ(f.value("survived", 0), f.value("injected", 0)) << kind;
  }
  EXPECT_GE(injected, 6u);
  EXPECT_GE(j["fault_plan"].size(), 6u);
  int restarted = 0;
  for (const auto& n : j["node_state"]) {
    restarted += n.value("incarnations", 0) > 1;
    EXPECT_EQ(n["stat"]["owner"].value("slots", -1), 0);
    EXPECT_EQ(n["stat"]["owner"].value("leases", -1), 0);
  }
  EXPECT_GE(restarted, 1);
  EXPECT_EQ(j["node_state"].size(), 4u);
  // Slot 1 keeps CAF requests (no channel on it); the other nodes' calls
  // to each other took the control channel.
  EXPECT_EQ(j["node_state"][1].value("control_channel", ""), "caf");
  EXPECT_TRUE(j["node_state"][1]["stat"]["control_channel"].is_null());
  int received = 0;
  for (int i : {0, 2, 3}) {
    const auto& cc = j["node_state"][i]["stat"]["control_channel"];
    ASSERT_TRUE(cc.is_object()) << i;
    received += cc.value("calls_received", 0);
  }
  EXPECT_GT(received, 0);
  EXPECT_FALSE(j["rss"].empty());
  EXPECT_NE(j.value("replay", "").find("--seed 11"), std::string::npos);
}

TEST(SoakRun, ANodeThatCorruptsWhatItGetsFailsTheRunWithTheSeedToReplayIt) {
  std::string err;
  auto j = run_soak({"--seed", "12", "--duration", "6", "--fault-interval-ms", "0",
                     "--test-corrupt-node", "1"},
                    1, &err);
  EXPECT_FALSE(j.value("passed", true));
  bool mismatch = false;
  for (const auto& v : j["violations"])
    mismatch = mismatch || v.get<std::string>().find("differ") != std::string::npos;
  EXPECT_TRUE(mismatch) << j["violations"].dump(2);
  EXPECT_NE(err.find("replay with: ferry soak --seed 12"), std::string::npos) << err;
}

TEST(SoakRun, APayloadNobodyFreesIsFoundAtTheEnd) {
  auto j = run_soak({"--seed", "13", "--duration", "5", "--fault-interval-ms", "0",
                     "--test-leak-node", "2"},
                    1);
  bool found = false;
  for (const auto& v : j["violations"]) {
    auto text = v.get<std::string>();
    found = found || (text.find("node 2 is not back at its idle baseline") != std::string::npos
                      && text.find("slots 1") != std::string::npos);
  }
  EXPECT_TRUE(found) << j["violations"].dump(2);
}

TEST(SoakRun, AnOperationCountEndsTheRunAndOptionsAreChecked) {
  auto j = run_soak({"--seed", "14", "--duration", "120", "--operations", "40",
                     "--fault-interval-ms", "0"},
                    0);
  EXPECT_GE(j.value("operations", 0), 40);
  EXPECT_LT(j.value("seconds", 1000.0), 120.0);
  auto bad = test::run_ferry({"soak", "--nodes", "1"}, 30s);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--nodes"), std::string::npos) << bad.err;
}

} // namespace
} // namespace ferry
