// ferry_ucx in one process: environment defaults, transport report, memory
// maps and the key bound, the worker's sleeping wait and its signal, and the
// packed-key gate in front of ucp_ep_rkey_unpack.
#include <gtest/gtest.h>
#include <ucm/api/ucm.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>
#include <unistd.h>
#include <vector>

#include "rdma/rkey_preparse.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_env.hpp"
#include "rdma/ucx_get.hpp"
#include "rdma/ucx_memory.hpp"
#include "rdma/ucx_worker.hpp"
#include "tests/ucx/ucx_test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;

// A context + worker + loopback endpoint (to its own worker) in this process.
using loopback = test::ucx_stack;

TEST(UcxEnv, DefaultsFillOnlyUnsetVariables) {
  ::setenv("UCX_RCACHE_ENABLE", "y", 1);
  apply_ucx_defaults();
  EXPECT_STREQ(std::getenv("UCX_RCACHE_ENABLE"), "y"); // the user's value wins
  ::unsetenv("UCX_RCACHE_ENABLE");
  apply_ucx_defaults();
  EXPECT_STREQ(std::getenv("UCX_RCACHE_ENABLE"), "n");
}

TEST(UcxEnv, MemoryEventsOffUnlessChosen) {
  if (std::getenv("UCX_MEM_EVENTS") != nullptr)
    GTEST_SKIP() << "UCX_MEM_EVENTS set by the user: UCX honours it";
  apply_ucx_defaults();
  EXPECT_EQ(ucm_global_opts.enable_events, 0);
  // Not exported: UCM would ignore it now and UCX would warn about it.
  EXPECT_EQ(std::getenv("UCX_MEM_EVENTS"), nullptr);
}

TEST(UcxContext, ReportsTcpOnly) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  std::cout << "transports(tcp): " << ctx->describe_transports() << "\n";
  EXPECT_TRUE(ctx->has_transport("tcp"));
  EXPECT_FALSE(ctx->has_shared_memory());
  EXPECT_FALSE(ctx->prefers_ucx_allocation());
  EXPECT_GT(ctx->request_size(), 0u);
}

TEST(UcxContext, ReportsSharedMemory) {
  test::set_ucx_env("posix,cma,self");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  std::cout << "transports(posix,cma,self): " << ctx->describe_transports() << "\n";
  EXPECT_TRUE(ctx->has_transport("posix"));
  EXPECT_FALSE(ctx->has_transport("tcp"));
  EXPECT_TRUE(ctx->has_shared_memory());
  EXPECT_TRUE(ctx->prefers_ucx_allocation());

  test::set_ucx_env("cma,tcp");
  auto cma_only = ucx_context::create();
  ASSERT_TRUE(cma_only) << cma_only.error_message();
  EXPECT_TRUE(cma_only->has_shared_memory());
  EXPECT_FALSE(cma_only->prefers_ucx_allocation()); // cma cannot share pages
}

TEST(UcxContext, RefusesUnknownTransportCleanly) {
  test::set_ucx_env("no_such_transport");
  auto ctx = ucx_context::create();
  if (ctx) // UCX may accept an unknown name and select nothing
    EXPECT_TRUE(ctx->transports().empty()) << ctx->describe_transports();
  else
    EXPECT_FALSE(ctx.error_message().empty());
}

TEST(UcxMemory, PackedKeysAreFramedAndWithinBound) {
  for (const char* tls : {"tcp", "posix,cma,self", "sm,self"}) {
    test::set_ucx_env(tls);
    auto ctx = ucx_context::create();
    ASSERT_TRUE(ctx) << ctx.error_message();
    for (bool allocate : {false, true}) {
      auto m = ucx_memory::map(*ctx, 1 << 20, allocate);
      ASSERT_TRUE(m) << tls << ": " << m.error_message();
      EXPECT_EQ(m->allocated_by_ucx(), allocate);
      EXPECT_NE(m->data(), nullptr);
      EXPECT_EQ(m->size(), 1u << 20);
      ASSERT_FALSE(m->rkey().empty());
      EXPECT_LE(m->rkey().size(), max_ucx_rkey_bytes);
      EXPECT_EQ(check_packed_rkey(m->rkey().data(), m->rkey().size()), rkey_check::ok);
      // The registered range covers what was asked for.
      auto eb = reinterpret_cast<std::uintptr_t>(m->effective_base());
      auto b = reinterpret_cast<std::uintptr_t>(m->data());
      EXPECT_LE(eb, b);
      EXPECT_GE(eb + m->effective_size(), b + m->size());
      std::memset(m->data(), 0x5a, m->size()); // the pages are writable
      std::cout << "rkey bytes: UCX_TLS=" << tls
                << (allocate ? " UCP_MEM_MAP_ALLOCATE: " : " plain: ") << m->rkey().size()
                << "\n";
    }
  }
}

TEST(UcxMemory, RefusesKeyOverTheBound) {
  test::set_ucx_env("posix,cma,self");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto tiny = ucx_memory::map(*ctx, 4096, true, /*rkey_limit=*/4);
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.status(), UCS_ERR_EXCEEDS_LIMIT);
  EXPECT_NE(tiny.error_message().find("bound is 4"), std::string::npos)
      << tiny.error_message();

  std::vector<char> buf(8192);
  auto tiny_existing = ucx_memory::map_existing(*ctx, buf.data(), buf.size(), 4);
  ASSERT_FALSE(tiny_existing);
  EXPECT_EQ(tiny_existing.status(), UCS_ERR_EXCEEDS_LIMIT);

  // A bound above max_ucx_rkey_bytes is clamped to it, never widened.
  auto wide = ucx_memory::map(*ctx, 4096, false, 1 << 20);
  ASSERT_TRUE(wide) << wide.error_message();
  EXPECT_LE(wide->rkey().size(), max_ucx_rkey_bytes);
}

TEST(UcxMemory, RefusesBadArguments) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  EXPECT_FALSE(ucx_memory::map(*ctx, 0, false));
  EXPECT_FALSE(ucx_memory::map(*ctx, 0, true));
  EXPECT_FALSE(ucx_memory::map_existing(*ctx, nullptr, 4096));
  char c = 0;
  EXPECT_FALSE(ucx_memory::map_existing(*ctx, &c, 0));
}

TEST(UcxMemory, MapExistingLeavesCallerMemoryAlone) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  std::vector<std::uint8_t> buf(3 * 4096 + 100);
  test::fill_pattern(buf.data(), 7, 0, buf.size());
  {
    auto m = ucx_memory::map_existing(*ctx, buf.data(), buf.size());
    ASSERT_TRUE(m) << m.error_message();
    EXPECT_EQ(m->data(), buf.data());
    EXPECT_FALSE(m->allocated_by_ucx());
    // Not page-aligned: UCX reports the exact range, pages are counted here.
    auto inner = ucx_memory::map_existing(*ctx, buf.data() + 5, 5000);
    ASSERT_TRUE(inner) << inner.error_message();
    EXPECT_EQ(inner->effective_size(), 5000u);
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    EXPECT_EQ(inner->page_bytes() % page, 0u);
    EXPECT_GE(inner->page_bytes(), 5000u);
    EXPECT_LE(inner->page_bytes(), 5000u + 2 * page);
    ucx_memory moved = std::move(*m); // moving keeps one registration
    EXPECT_EQ(moved.data(), buf.data());
    EXPECT_EQ(m->native(), nullptr);
  }
  // Unmapped, not freed: the caller's bytes are intact and usable.
  EXPECT_EQ(test::checksum(buf.data(), buf.size()),
            test::pattern_checksum(7, 0, buf.size()));
  buf[0] = 1;
}

TEST(UcxMemory, OutlivesItsContextObject) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto m = ucx_memory::map(*ctx, 4096, true);
  ASSERT_TRUE(m) << m.error_message();
  { ucx_context gone = std::move(*ctx); } // the native context lives on
  std::memset(m->data(), 1, m->size());
}

// ---- worker wait and signal ----------------------------------------------

// Calls wait_for_events(0) until it reports nothing pending (bounded).
void drain(ucx_worker& w) {
  for (int i = 0; i < 1000; ++i) {
    auto r = w.wait_for_events(0ms);
    ASSERT_TRUE(r) << r.error_message();
    if (*r == ucx_wake::timed_out)
      return;
  }
  FAIL() << "worker never went idle";
}

TEST(UcxWorker, AddressIsNonEmpty) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto w = ucx_worker::create(*ctx);
  ASSERT_TRUE(w) << w.error_message();
  EXPECT_FALSE(w->address().empty());
  std::cout << "worker address bytes (tcp/lo): " << w->address().size() << "\n";
}

TEST(UcxWorker, WaitTimesOutWhenIdle) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto w = ucx_worker::create(*ctx);
  ASSERT_TRUE(w) << w.error_message();
  drain(*w);
  auto r = w->wait_for_events(30ms);
  ASSERT_TRUE(r) << r.error_message();
  EXPECT_EQ(*r, ucx_wake::timed_out);
}

TEST(UcxWorker, SignalBeforeWaitIsNotLost) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto w = ucx_worker::create(*ctx);
  ASSERT_TRUE(w) << w.error_message();
  drain(*w);
  ASSERT_TRUE(w->signal());
  auto r = w->wait_for_events(20s);
  ASSERT_TRUE(r) << r.error_message();
  EXPECT_NE(*r, ucx_wake::timed_out); // at once: arm consumed the signal
  // Consumed: the next wait sleeps again.
  auto again = w->wait_for_events(10ms);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, ucx_wake::timed_out);
}

TEST(UcxWorker, WaitReturnsOnSignalFromAnotherThread) {
  for (const char* tls : {"tcp", "posix,cma,self"}) {
    test::set_ucx_env(tls);
    auto ctx = ucx_context::create();
    ASSERT_TRUE(ctx) << ctx.error_message();
    auto w = ucx_worker::create(*ctx);
    ASSERT_TRUE(w) << w.error_message();
    drain(*w);
    ucx_status sent;
    std::thread other([&] {
      std::this_thread::sleep_for(50ms);
      sent = w->signal();
    });
    auto r = w->wait_for_events(20s); // returns long before, or the test fails
    other.join();
    ASSERT_TRUE(sent) << sent.error_message();
    ASSERT_TRUE(r) << r.error_message();
    // events, or stalled where the signal came between the progress and
    // the arm (arm consumed it): either way at once, not at the limit.
    EXPECT_NE(*r, ucx_wake::timed_out) << tls;
  }
}

// ---- the packed-key gate ---------------------------------------------------

TEST(UcxRkey, RefusesBadFramingBeforeUnpack) {
  loopback lb("tcp,self");
  ASSERT_TRUE(lb.error.empty()) << lb.error;
  auto m = ucx_memory::map(*lb.ctx, 64 * 1024, false);
  ASSERT_TRUE(m) << m.error_message();
  test::fill_pattern(m->data(), 3, 0, m->size());
  const std::vector<std::uint8_t> good = m->rkey();

  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> bad;
  bad.push_back({"empty", {}});
  for (std::size_t n = 1; n < good.size(); ++n)
    bad.push_back({"truncated to " + std::to_string(n),
                   std::vector<std::uint8_t>(good.begin(), good.begin() + n)});
  auto trailing = good;
  trailing.push_back(0);
  bad.push_back({"one trailing byte", trailing});
  auto bad_type = good;
  bad_type[8] = 0x7f;
  bad.push_back({"mem_type 0x7f", bad_type});
  auto more_domains = good;
  more_domains[7] = 0xff; // bitmap claims domains the blob does not hold
  bad.push_back({"bitmap flipped", more_domains});
  bad.push_back({"over the bound", std::vector<std::uint8_t>(max_ucx_rkey_bytes + 1, 0)});

  for (const auto& [name, blob] : bad) {
    auto key = lb.ep->unpack_rkey(blob);
    ASSERT_FALSE(key) << name; // refused, and (since we are here) no crash
    EXPECT_EQ(key.status(), UCS_ERR_INVALID_PARAM) << name;
    EXPECT_NE(key.error_message().find("refused before unpack"), std::string::npos)
        << name << ": " << key.error_message();
  }
  auto null_key = lb.ep->unpack_rkey(nullptr, 10);
  EXPECT_FALSE(null_key);

  // The good key still unpacks and reads.
  auto key = lb.ep->unpack_rkey(good);
  ASSERT_TRUE(key) << key.error_message();
  std::vector<std::uint8_t> dst(4096 + 3);
  auto r = get(*lb.worker, *lb.ep, *key, m->address() + 1001, dst.data(), dst.size(), 20s);
  ASSERT_TRUE(r.ok()) << to_string(r.state) << ": " << r.error;
  EXPECT_EQ(test::checksum(dst.data(), dst.size()),
            test::pattern_checksum(3, 1001, dst.size()));
}

TEST(UcxEndpoint, RefusesBadAddressSizes) {
  test::set_ucx_env("tcp");
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto w = ucx_worker::create(*ctx);
  ASSERT_TRUE(w) << w.error_message();
  EXPECT_FALSE(ucx_endpoint::connect(*w, nullptr, 100));
  EXPECT_FALSE(ucx_endpoint::connect(*w, std::vector<char>{}));
  std::vector<char> huge(max_ucx_worker_address_bytes + 1);
  EXPECT_FALSE(ucx_endpoint::connect(*w, huge));
}

TEST(UcxGet, RefusesMismatchedObjects) {
  loopback lb("tcp,self");
  ASSERT_TRUE(lb.error.empty()) << lb.error;
  auto m = ucx_memory::map(*lb.ctx, 8192, false);
  ASSERT_TRUE(m) << m.error_message();
  auto other_ep = ucx_endpoint::connect(*lb.worker, lb.worker->address());
  ASSERT_TRUE(other_ep) << other_ep.error_message();
  auto key = lb.ep->unpack_rkey(m->rkey());
  ASSERT_TRUE(key) << key.error_message();
  std::vector<char> dst(64);

  // A key unpacked on another endpoint.
  auto r = get(*lb.worker, *other_ep, *key, m->address(), dst.data(), dst.size(), 1s);
  EXPECT_EQ(r.state, ucx_get_state::failed);
  EXPECT_NE(r.error.find("not unpacked on this endpoint"), std::string::npos) << r.error;

  // A null destination.
  r = get(*lb.worker, *lb.ep, *key, m->address(), nullptr, 64, 1s);
  EXPECT_EQ(r.state, ucx_get_state::failed);

  // Zero bytes: done without UCX.
  r = get(*lb.worker, *lb.ep, *key, m->address(), nullptr, 0, 1s);
  EXPECT_TRUE(r.ok());

  // A worker that does not own the endpoint.
  auto w2 = ucx_worker::create(*lb.ctx);
  ASSERT_TRUE(w2) << w2.error_message();
  r = get(*w2, *lb.ep, *key, m->address(), dst.data(), dst.size(), 1s);
  EXPECT_EQ(r.state, ucx_get_state::failed);

  // A closed endpoint; its keys are refused too.
  ASSERT_TRUE(lb.ep->close());
  r = get(*lb.worker, *lb.ep, *key, m->address(), dst.data(), dst.size(), 1s);
  EXPECT_EQ(r.state, ucx_get_state::failed);
  EXPECT_FALSE(lb.ep->unpack_rkey(m->rkey()));
}

TEST(UcxGet, PostedRequestCanBeTestedAndWaited) {
  loopback lb("tcp,self");
  ASSERT_TRUE(lb.error.empty()) << lb.error;
  auto m = ucx_memory::map(*lb.ctx, 1 << 20, false);
  ASSERT_TRUE(m) << m.error_message();
  test::fill_pattern(m->data(), 9, 0, m->size());
  auto key = lb.ep->unpack_rkey(m->rkey());
  ASSERT_TRUE(key) << key.error_message();
  std::vector<std::uint8_t> dst(m->size());
  auto req = post_get(*lb.worker, *lb.ep, *key, m->address(), dst.data(), dst.size());
  ASSERT_TRUE(req) << req.error_message();
  auto t = req->test();
  EXPECT_TRUE(t.state == ucx_get_state::in_progress || t.state == ucx_get_state::done);
  auto r = req->wait(20s);
  ASSERT_TRUE(r.ok()) << to_string(r.state) << ": " << r.error;
  EXPECT_FALSE(req->pending());
  EXPECT_EQ(test::checksum(dst.data(), dst.size()),
            test::pattern_checksum(9, 0, dst.size()));
}

} // namespace
} // namespace ferry
