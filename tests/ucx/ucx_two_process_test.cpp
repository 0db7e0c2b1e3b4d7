// ferry_ucx between two real processes: an owner child (fork + exec of this
// binary) maps and fills memory, offers its worker address and keys over a
// socket pair, and progresses its worker; this process GETs and compares
// checksums. Bytes are asserted, timings never.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <vector>

#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_get.hpp"
#include "rdma/ucx_worker.hpp"
#include "tests/ucx/ucx_test_support.hpp"

namespace ferry {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t MiB = 1 << 20;
// 64 MiB plus room for offsets.
constexpr std::size_t region_bytes = 64 * MiB + 16 * 1024;
constexpr auto get_timeout = 30s;

// This process's side: context, worker, endpoint to the child, its key.
struct consumer : test::ucx_stack {
  consumer(const std::string& tls, const test::child_offer& offer,
           const test::offered_region& region)
    : ucx_stack(tls, offer.worker_address) { // env set after the fork
    if (!ok())
      return;
    auto k = ep->unpack_rkey(region.rkey);
    if (!k) {
      error = k.error_message();
      return;
    }
    key = std::make_unique<ucx_remote_key>(std::move(*k));
  }

  // GETs [offset, offset + len) of `region` and checks bytes and guards.
  ::testing::AssertionResult read_and_check(const test::offered_region& region,
                                            std::uint64_t offset, std::size_t len) {
    constexpr std::size_t guard = 64;
    std::vector<std::uint8_t> dst(len + 2 * guard, 0xA5);
    auto r = get(*worker, *ep, *key, region.address + offset, dst.data() + guard, len,
                 get_timeout);
    if (!r.ok())
      return ::testing::AssertionFailure()
             << "GET " << len << " B: " << to_string(r.state) << ": " << r.error;
    if (test::checksum(dst.data() + guard, len)
        != test::pattern_checksum(region.seed, offset, len))
      return ::testing::AssertionFailure() << "GET " << len << " B: checksum differs";
    for (std::size_t i = 0; i < guard; ++i)
      if (dst[i] != 0xA5 || dst[guard + len + i] != 0xA5)
        return ::testing::AssertionFailure() << "GET " << len << " B wrote outside";
    return ::testing::AssertionSuccess();
  }

  std::unique_ptr<ucx_remote_key> key;
};

const test::offered_region& pick(const test::child_offer& o, bool allocated) {
  return allocated ? o.ucx : o.plain;
}

// 1 B, 4 KiB, 1 MiB and 64 MiB from one region, at offsets that also test
// unaligned addressing.
void read_all_sizes(const std::string& tls, bool allocated) {
  test::owner_child child(tls, region_bytes);
  ASSERT_TRUE(child.ok()) << child.error();
  const auto& region = pick(child.offer(), allocated);
  ASSERT_EQ(region.allocated_by_ucx, allocated);
  std::cout << "UCX_TLS=" << tls << " child transports: " << child.offer().transports
            << " | " << (allocated ? "UCP_MEM_MAP_ALLOCATE" : "plain")
            << " rkey bytes: " << region.rkey.size()
            << " | worker address bytes: " << child.offer().worker_address.size() << "\n";
  consumer c(tls, child.offer(), region);
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_TRUE(c.read_and_check(region, 13, 1));
  EXPECT_TRUE(c.read_and_check(region, 4096 + 7, 4096));
  EXPECT_TRUE(c.read_and_check(region, 8192, MiB));
  EXPECT_TRUE(c.read_and_check(region, 4096, 64 * MiB));
  EXPECT_TRUE(c.read_and_check(region, 0, 1)); // again, after the large one
  EXPECT_TRUE(c.ep->close());
  EXPECT_TRUE(child.quit());
}

TEST(UcxTwoProcess, TcpPlainRegion) { read_all_sizes("tcp", false); }
TEST(UcxTwoProcess, TcpUcxAllocatedRegion) { read_all_sizes("tcp", true); }
TEST(UcxTwoProcess, PosixPlainRegion) { read_all_sizes("posix,cma,self", false); }
TEST(UcxTwoProcess, PosixUcxAllocatedRegion) { read_all_sizes("posix,cma,self", true); }
TEST(UcxTwoProcess, SmUcxAllocatedRegion) { read_all_sizes("sm,self", true); }

// Over shared memory, UCX-allocated memory is read one-sided: the owner is
// halted (not progressing at all) and GETs still complete with the right
// bytes. posix with UCX_TLS=posix,cma,self; sysv with sm,self.
void reads_without_owner_progress(const std::string& tls) {
  test::owner_child child(tls, region_bytes);
  ASSERT_TRUE(child.ok()) << child.error();
  const auto& region = child.offer().ucx;
  consumer c(tls, child.offer(), region);
  ASSERT_TRUE(c.ok()) << c.error;
  ASSERT_TRUE(c.read_and_check(region, 0, 4096)); // wire-up done while it progresses
  ASSERT_TRUE(child.halt());
  EXPECT_TRUE(c.read_and_check(region, 4096, MiB));
  EXPECT_TRUE(c.read_and_check(region, 0, 64 * MiB));
  EXPECT_TRUE(c.ep->close());
  EXPECT_TRUE(child.quit());
}

TEST(UcxTwoProcess, PosixAllocatedReadsWithoutOwnerProgress) {
  reads_without_owner_progress("posix,cma,self");
}
TEST(UcxTwoProcess, SysvAllocatedReadsWithoutOwnerProgress) {
  reads_without_owner_progress("sm,self");
}

// The other face of one-sided reads: pages stay readable after the owner
// died, through a key unpacked before (the consumer's mapping keeps them).
TEST(UcxTwoProcess, PosixAllocatedStaysReadableAfterOwnerDies) {
  const std::string tls = "posix,cma,self";
  test::owner_child child(tls, 4 * MiB);
  ASSERT_TRUE(child.ok()) << child.error();
  const auto& region = child.offer().ucx;
  consumer c(tls, child.offer(), region);
  ASSERT_TRUE(c.ok()) << c.error;
  ASSERT_TRUE(c.read_and_check(region, 0, 4096));
  child.kill_now();
  EXPECT_TRUE(c.read_and_check(region, 4096, MiB));
}

// Over tcp the GET is emulated: a halted owner never answers. The GET must
// end (timed_out or abandoned) within its bounds, never hang.
TEST(UcxTwoProcess, TcpHaltedOwnerEndsWithinBounds) {
  const std::string tls = "tcp";
  test::owner_child child(tls, 4 * MiB);
  ASSERT_TRUE(child.ok()) << child.error();
  const auto& region = child.offer().plain;
  consumer c(tls, child.offer(), region);
  ASSERT_TRUE(c.ok()) << c.error;
  ASSERT_TRUE(c.read_and_check(region, 0, 4096));
  ASSERT_TRUE(child.halt());
  std::vector<std::uint8_t> dst(MiB);
  auto r = get(*c.worker, *c.ep, *c.key, region.address, dst.data(), dst.size(), 300ms);
  std::cout << "halted owner over tcp: " << to_string(r.state) << ": " << r.error << "\n";
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.state == ucx_get_state::timed_out || r.state == ucx_get_state::abandoned);
  EXPECT_EQ(r.unfinished.pending(), r.state == ucx_get_state::abandoned);
  // Let the owner go; a late answer may now complete the kept request.
  EXPECT_TRUE(child.quit());
  if (r.unfinished.pending()) {
    auto late = r.unfinished.wait(2s);
    std::cout << "after the owner quit, the kept request: " << to_string(late.state)
              << "\n";
  }
}

// A GET to an owner that was killed after the first GET ends cleanly:
// failed, timed out or abandoned, within bounds, and this process lives.
void dead_owner(const std::string& tls) {
  test::owner_child child(tls, 4 * MiB);
  ASSERT_TRUE(child.ok()) << child.error();
  const auto& region = child.offer().plain;
  consumer c(tls, child.offer(), region);
  ASSERT_TRUE(c.ok()) << c.error;
  ASSERT_TRUE(c.read_and_check(region, 0, 4096));
  child.kill_now();
  std::vector<std::uint8_t> dst(MiB);
  auto r = get(*c.worker, *c.ep, *c.key, region.address, dst.data(), dst.size(), 1s);
  std::cout << "UCX_TLS=" << tls << " dead owner: " << to_string(r.state) << " ("
            << ucs_status_string(r.status) << "): " << r.error << "\n";
  EXPECT_FALSE(r.ok());
  // A second GET on the same endpoint ends as cleanly.
  auto again = get(*c.worker, *c.ep, *c.key, region.address, dst.data(), 64, 500ms);
  std::cout << "  second GET: " << to_string(again.state) << ": " << again.error << "\n";
  EXPECT_FALSE(again.ok());
  auto closed = c.ep->close(500ms);
  std::cout << "  close: " << (closed ? "ok" : closed.error_message()) << "\n";
}

TEST(UcxTwoProcess, TcpDeadOwnerEndsCleanly) { dead_owner("tcp"); }
TEST(UcxTwoProcess, PosixDeadOwnerEndsCleanly) { dead_owner("posix,cma,self"); }

// Connecting to the address of a worker that is already gone.
TEST(UcxTwoProcess, TcpOwnerGoneBeforeConnect) {
  const std::string tls = "tcp";
  test::owner_child child(tls, MiB);
  ASSERT_TRUE(child.ok()) << child.error();
  const test::child_offer offer = child.offer();
  child.kill_now();
  consumer c(tls, offer, offer.plain);
  if (!c.ok()) { // refusing at connect or unpack is clean too
    std::cout << "owner gone before connect: " << c.error << "\n";
    return;
  }
  std::vector<std::uint8_t> dst(4096);
  auto r = get(*c.worker, *c.ep, *c.key, offer.plain.address, dst.data(), dst.size(), 1s);
  std::cout << "owner gone before connect: " << to_string(r.state) << ": " << r.error
            << "\n";
  EXPECT_FALSE(r.ok());
}

// Peer error mode over tcp: UCX reports the dead owner, and the GET fails
// instead of being abandoned.
TEST(UcxTwoProcess, TcpPeerModeReportsDeadOwner) {
  const std::string tls = "tcp";
  test::owner_child child(tls, 4 * MiB);
  ASSERT_TRUE(child.ok()) << child.error();
  const auto& region = child.offer().plain;
  test::set_ucx_env(tls);
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto w = ucx_worker::create(*ctx);
  ASSERT_TRUE(w) << w.error_message();
  ucx_endpoint_config cfg;
  cfg.error_mode = ucx_error_mode::peer;
  auto ep = ucx_endpoint::connect(*w, child.offer().worker_address, cfg);
  ASSERT_TRUE(ep) << ep.error_message();
  auto key = ep->unpack_rkey(region.rkey);
  ASSERT_TRUE(key) << key.error_message();
  std::vector<std::uint8_t> dst(MiB);
  auto r = get(*w, *ep, *key, region.address, dst.data(), 4096, get_timeout);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(test::checksum(dst.data(), 4096), test::pattern_checksum(region.seed, 0, 4096));
  child.kill_now();
  r = get(*w, *ep, *key, region.address, dst.data(), dst.size(), get_timeout);
  std::cout << "peer mode, dead owner: " << to_string(r.state) << ": " << r.error
            << " | endpoint failure: " << ucs_status_string(ep->failure()) << "\n";
  EXPECT_EQ(r.state, ucx_get_state::failed);
  EXPECT_NE(ep->failure(), UCS_OK);
  // A failed endpoint refuses further GETs before UCX sees them.
  r = get(*w, *ep, *key, region.address, dst.data(), 64, get_timeout);
  EXPECT_EQ(r.state, ucx_get_state::failed);
  EXPECT_TRUE(ep->close()); // forced in peer mode
}

// Peer error mode cannot use shared memory on UCX 1.13: with no tcp the
// endpoint is refused, as a value.
TEST(UcxTwoProcess, PeerModeWithoutTcpIsRefused) {
  const std::string tls = "posix,cma,self";
  test::owner_child child(tls, MiB);
  ASSERT_TRUE(child.ok()) << child.error();
  test::set_ucx_env(tls);
  auto ctx = ucx_context::create();
  ASSERT_TRUE(ctx) << ctx.error_message();
  auto w = ucx_worker::create(*ctx);
  ASSERT_TRUE(w) << w.error_message();
  ucx_endpoint_config cfg;
  cfg.error_mode = ucx_error_mode::peer;
  auto ep = ucx_endpoint::connect(*w, child.offer().worker_address, cfg);
  EXPECT_FALSE(ep);
  if (!ep)
    std::cout << "peer mode over shared memory only: " << ep.error_message() << "\n";
}

} // namespace
} // namespace ferry
