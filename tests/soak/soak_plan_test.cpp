// The soak's plain structures: the seeded fault plan (replayable, every
// kind in a short run, nothing past the duration) and the ledger's verdict
// (what is a violation and what a survived failure; the memory slope) and
// the text report of a failed run; a node's death inside a library that is
// known (and only such a death) is recorded apart from the violations.
#include <gtest/gtest.h>

#include <signal.h>

#include <regex>
#include <string>
#include <set>

#include "soak/fault_plan.hpp"
#include "soak/known_aborts.hpp"
#include "soak/run_ledger.hpp"
#include "soak/soak_report.hpp"

namespace ferry::soak {
namespace {

using namespace std::chrono_literals;

TEST(SoakPlan, TheSameSeedGivesTheSamePlanAndEveryKindComesInAShortRun) {
  auto a = make_fault_plan(42, 60s, 6s);
  auto b = make_fault_plan(42, 60s, 6s);
  auto c = make_fault_plan(43, 60s, 6s);
  ASSERT_EQ(a.size(), b.size());
  bool differs = a.size() != c.size();
  std::set<fault_kind> kinds;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].at, b[i].at);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].seed, b[i].seed);
    EXPECT_LT(a[i].at, 60s);
    if (i > 0) {
      EXPECT_GT(a[i].at, a[i - 1].at);
    }
    if (i < c.size())
      differs = differs || a[i].kind != c[i].kind || a[i].at != c[i].at;
    kinds.insert(a[i].kind);
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(kinds.size(), std::size(all_fault_kinds)); // 9 faults: each of 6 kinds once
  EXPECT_TRUE(make_fault_plan(42, 60s, 0s).empty());  // --fault-interval-ms 0
  EXPECT_TRUE(make_fault_plan(42, 5s, 6s).empty());
}

op_record op(std::string kind, std::vector<int> nodes, soak_clock::time_point start,
             std::chrono::milliseconds took, node_answer::kind how) {
  op_record r;
  r.kind = std::move(kind);
  r.nodes = std::move(nodes);
  r.start = start;
  r.end = start + took;
  r.how = how;
  r.text = "why";
  r.bound = 10s;
  r.bytes = 100;
  return r;
}

TEST(SoakLedger, AFailureIsSurvivedOnlyUnderAFaultOnOneOfItsNodesAndWithinItsBound) {
  run_ledger ledger;
  auto t = soak_clock::now();
  ledger.add_fault_window(2, t + 1s, t + 3s);
  ledger.add_op(op("get", {0, 1}, t, 100ms, node_answer::kind::ok));
  ledger.add_op(op("get", {1, 2}, t + 2s, 100ms, node_answer::kind::fail)); // under the fault
  ledger.add_op(op("get", {1, 2}, t + 500ms, 600ms, node_answer::kind::lost)); // overlaps it
  ledger.add_op(op("get", {0, 1}, t + 2s, 100ms, node_answer::kind::fail)); // not its nodes
  ledger.add_op(op("get", {1, 2}, t + 4s, 100ms, node_answer::kind::fail)); // after it
  ledger.add_op(op("call", {2, 3}, t, 20s, node_answer::kind::fail));      // over its bound
  ledger.add_op(op("call", {2, 3}, t + 2s, 1s, node_answer::kind::mismatch)); // never survived
  ledger.add_op(op("call", {2, 3}, t + 2s, 1s, node_answer::kind::hung));
  auto v = ledger.judge();
  EXPECT_EQ(v.operations, 8u);
  EXPECT_EQ(v.ops["get"].ok, 1u);
  EXPECT_EQ(v.ops["get"].bytes, 100u);
  EXPECT_EQ(v.ops["get"].survived, 2u);
  EXPECT_EQ(v.ops["get"].violations, 2u);
  EXPECT_EQ(v.ops["call"].violations, 3u);
  ASSERT_EQ(v.violations.size(), 5u);
  EXPECT_NE(v.violations[0].find("no fault to explain it"), std::string::npos);
  // When it ran, on the clock of the nodes' logs: HH:MM:SS.mmm to HH:MM:SS.mmm.
  EXPECT_TRUE(std::regex_search(v.violations[0],
                                std::regex{R"(get on nodes 0,1 \(\d\d:\d\d:\d\d\.\d{3} to \d\d:\d\d:\d\d\.\d{3}\))"}))
    << v.violations[0];
  EXPECT_NE(v.violations[2].find("over its bound"), std::string::npos);
  ledger.add_violation("node 1 is not back at its idle baseline");
  EXPECT_EQ(ledger.judge().violations.back(), "node 1 is not back at its idle baseline");
}

TEST(SoakLedger, TheMemorySlopeIsFittedOverTheSecondHalfOfEachIncarnation) {
  EXPECT_NEAR(slope_mib_per_minute({0, 60, 120}, {0, 1048576, 2097152}), 1.0, 1e-9);
  EXPECT_EQ(slope_mib_per_minute({5}, {1}), 0.0);
  run_ledger ledger;
  // Incarnation 1: a warm-up jump, then flat; incarnation 2: 2 MiB a minute.
  for (int s = 0; s < 10; ++s)
    ledger.add_rss(0, 1, s * 6.0, s < 5 ? s * (64ull << 20) : 400ull << 20);
  for (int s = 0; s < 10; ++s)
    ledger.add_rss(0, 2, 100 + s * 30.0, (100ull << 20) + s * (1ull << 20));
  auto v = ledger.judge();
  ASSERT_EQ(v.rss.size(), 2u);
  EXPECT_NEAR(v.rss[0].mib_per_minute, 0.0, 1e-9);
  EXPECT_NEAR(v.rss[1].mib_per_minute, 2.0, 1e-9);
  EXPECT_EQ(v.rss[1].last_bytes, (100ull << 20) + 9 * (1ull << 20));
}

TEST(SoakReport, AFailedRunShowsEachNodesControlChannel) {
  soak_options opts;
  opts.seed = 7;
  soak_summary s;
  s.opts = &opts;
  s.nodes.push_back({{"node", 3},
                     {"stat", {{"control_channel", {{"sends_in_flight", 2}}}}}});
  s.nodes.push_back({{"node", 1}, {"stat", nlohmann::json::object()}}); // on CAF
  testing::internal::CaptureStdout();
  print_report(s);
  auto passed = testing::internal::GetCapturedStdout();
  EXPECT_EQ(passed.find("control channel:"), std::string::npos) << passed;
  s.verdict.violations.push_back("get_plain on nodes 0,3 failed");
  testing::internal::CaptureStdout();
  print_report(s);
  auto failed = testing::internal::GetCapturedStdout();
  EXPECT_NE(failed.find("node 3 control channel: {\"sends_in_flight\":2}"), std::string::npos)
    << failed;
  EXPECT_EQ(failed.find("node 1 control channel"), std::string::npos) << failed;
}

// The ends of two node logs from CI runs (2026-12-07), trimmed.
const char* const failed_get_reply_log =
  "22:59:29.553 [ferry-soak-node warning] peer 6e6d3b7b8040aeba left\n"
  "[vm:28254:0:28261] ucp_request.inl:346  Fatal: unexpected error: Endpoint timeout\n"
  "==== backtrace (tid:  28261) ====\n"
  " 0  /lib/x86_64-linux-gnu/libucs.so.0(ucs_handle_error+0x2dc) [0x7f96edd7fe9c]\n"
  " 3  /lib/x86_64-linux-gnu/libucp.so.0(ucp_get_req_handler+0x32c) [0x7f96ede1b89c]\n"
  " 8  /lib/x86_64-linux-gnu/libucp.so.0(ucp_worker_progress+0x72) [0x7f96eddfdef2]\n"
  " 9  /tmp/ci/main/build/apps/ferry(+0x2b6e7b) [0x564169233e7b]\n"
  "=================================\n";
const char* const pending_purge_log =
  "[vm:1:0:2] stubs.c:102  Assertion `0' failed\n"
  "==== backtrace (tid: 2) ====\n"
  " 4  /lib/x86_64-linux-gnu/libuct.so.0(uct_tcp_ep_pending_purge+0x4f) [0x7f0]\n"
  " 5  /lib/x86_64-linux-gnu/libuct.so.0(uct_tcp_ep_destroy_internal+0x2a) [0x7f1]\n"
  " 9  /tmp/ci/main/build/apps/ferry(+0x2b6e7b) [0x5641]\n"
  "=================================\n";

/// `log` with `from` replaced by `to` (once).
std::string with(std::string log, const std::string& from, const std::string& to) {
  auto at = log.find(from);
  return at == std::string::npos ? log : log.replace(at, from.size(), to);
}

TEST(SoakKnownAborts, OnlyALibrarysOwnAbortThroughItsOwnFrameIsKnown) {
  auto reply = known_library_abort(failed_get_reply_log, SIGABRT);
  ASSERT_TRUE(reply);
  EXPECT_NE(reply->find("a failed reply to a GET is fatal"), std::string::npos) << *reply;
  auto purge = known_library_abort(pending_purge_log, SIGABRT);
  ASSERT_TRUE(purge);
  EXPECT_NE(purge->find("wires up over tcp"), std::string::npos) << *purge;
  // Not a death by SIGABRT.
  EXPECT_FALSE(known_library_abort(failed_get_reply_log, 0));
  // The message without UCX's frame, the frame without the message.
  EXPECT_FALSE(known_library_abort(with(failed_get_reply_log, "ucp_get_req_handler",
                                        "ucp_am_handler"),
                                   SIGABRT));
  EXPECT_FALSE(known_library_abort(" 3 libucp.so.0(ucp_get_req_handler+0x32c)\n", SIGABRT));
  // Another assertion, with the purge in its backtrace: ferry's callback
  // (a send's completion, run by the purge) asserting, for one.
  EXPECT_FALSE(known_library_abort(with(pending_purge_log, "stubs.c:102  Assertion `0' failed",
                                        "ucp_request.c:99  Assertion `req->flags' failed"),
                                   SIGABRT));
  // A frame of ferry's above the library's: ferry's code failed in there.
  EXPECT_FALSE(known_library_abort(
    with(pending_purge_log, " 4  /lib",
         " 3  /tmp/ci/main/build/apps/ferry(+0x2a0) [0x5]\n 4  /lib"),
    SIGABRT));
  // A crash in ferry's own code, an empty log.
  EXPECT_FALSE(known_library_abort(
    "Segmentation fault\n 0 ferry(ferry::consumer::deliver+0x10)\n"
    " 1 libucp.so.0(ucp_worker_progress+0x72)\n",
    SIGABRT));
  EXPECT_FALSE(known_library_abort("", SIGABRT));
}

// A third, from the one-minute soak of a clean-clone CI run (2026-12-07).
const char* const stale_tcp_event_log =
  "[vm:6786 :0:6793] Caught signal 11 (Segmentation fault: Sent by the kernel at address (nil))\n"
  "==== backtrace (tid:   6793) ====\n"
  " 0  /lib/x86_64-linux-gnu/libucs.so.0(ucs_handle_error+0x2dc) [0x7f28e7f33e9c]\n"
  " 3  /lib/x86_64-linux-gnu/libc.so.6(+0x3c050) [0x7f28e6e5a050]\n"
  " 4  /lib/x86_64-linux-gnu/libucs.so.0(ucs_mpool_cleanup+0x20) [0x7f28e7f2c0c0]\n"
  " 5  /lib/x86_64-linux-gnu/libuct.so.0(+0x2431f) [0x7f28e73a231f]\n"
  " 6  /lib/x86_64-linux-gnu/libucs.so.0(ucs_event_set_wait+0xe1) [0x7f28e7f3c9c1]\n"
  " 7  /lib/x86_64-linux-gnu/libuct.so.0(uct_tcp_iface_progress+0x7b) [0x7f28e73a229b]\n"
  " 8  /lib/x86_64-linux-gnu/libucp.so.0(ucp_worker_progress+0x72) [0x7f28e7fb1ef2]\n"
  " 9  /tmp/ci/main/build/apps/ferry(+0x3bbeb5) [0x55617bf1beb5]\n"
  "=================================\n";

TEST(SoakKnownAborts, ASegfaultInUctsOwnSocketEventHandlingIsKnownOnlyWithoutUcpOrFerryAboveIt) {
  auto stale = known_library_abort(stale_tcp_event_log, SIGSEGV);
  ASSERT_TRUE(stale);
  EXPECT_NE(stale->find("socket event"), std::string::npos) << *stale;
  EXPECT_FALSE(known_library_abort(stale_tcp_event_log, SIGABRT)); // another signal
  // A GET served from memory that was let go crashes in UCP's handler,
  // under the same progress: ferry's to prevent, never known.
  EXPECT_FALSE(known_library_abort(
    with(stale_tcp_event_log, " 5  /lib",
         " 4  /lib/x86_64-linux-gnu/libucp.so.0(ucp_get_req_handler+0x32c) [0x1]\n 5  /lib"),
    SIGSEGV));
  // An active message's handler of ferry's, called from there.
  EXPECT_FALSE(known_library_abort(
    with(stale_tcp_event_log, " 5  /lib",
         " 4  /tmp/ci/main/build/apps/ferry(+0x2a0) [0x5]\n 5  /lib"),
    SIGSEGV));
}

TEST(SoakLedger, ANodeDeathIsAViolationUnlessItIsAKnownLibraryAbort) {
  run_ledger ledger;
  EXPECT_FALSE(ledger.add_node_death("node 1 (incarnation 1) exited on its own",
                                     failed_get_reply_log, SIGABRT));
  EXPECT_TRUE(ledger.add_node_death("node 2 (incarnation 3) exited on its own",
                                    "Segmentation fault\n", SIGSEGV));
  auto v = ledger.judge();
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_NE(v.violations[0].find("node 2 (incarnation 3) exited on its own: Segmentation"),
            std::string::npos)
    << v.violations[0];
  ASSERT_EQ(v.known_aborts.size(), 1u);
  EXPECT_NE(v.known_aborts[0].find("node 1 (incarnation 1)"), std::string::npos);
  EXPECT_NE(v.known_aborts[0].find("ucp_get_req_handler"), std::string::npos)
    << v.known_aborts[0];
  // Reported, apart from the violations.
  soak_options opts;
  soak_summary s;
  s.opts = &opts;
  s.verdict = v;
  EXPECT_EQ(report_json(s)["known_library_aborts"].size(), 1u);
  EXPECT_EQ(report_json(s)["violations"].size(), 1u);
}

} // namespace
} // namespace ferry::soak
