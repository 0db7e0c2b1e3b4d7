// Staged local copies through the pool, against the fake CUDA: the bytes
// and the guard bytes around them, chunk tails, context and chunk reuse,
// deadlines at chunk boundaries, and every failure keeping its charge.
#include "staging/local_stager.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/errors.hpp"
#include "staging/fake_cuda.hpp"

namespace {

using namespace ferry::staging;
using namespace std::chrono_literals;
constexpr size_t chunk = 64 * 1024;
constexpr char guard = '\x5a';

template <class Pred>
bool eventually(Pred pred) {
  auto until = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

staging_config small_pool(size_t count = 2, const char* where = "any") {
  staging_config c;
  c.chunk_size = chunk;
  c.chunk_count = count;
  c.location = *staging_location::parse(where);
  return c;
}

struct CudaStagedCopy : ::testing::Test {
  void SetUp() override { make(small_pool()); }
  void make(staging_config cfg, local_stager::options opts = {}) {
    stager.reset();
    cuda = std::make_shared<fake_cuda>();
    stager = std::make_unique<local_stager>(cuda, cfg, opts);
  }
  /// Device memory holding `bytes` of a pattern (the fake's device memory
  /// is real host memory, so the fixture fills it directly).
  device_ptr device_with(size_t bytes, unsigned seed) {
    auto ctx = *cuda->retain_context(0);
    cuda->push_context(ctx);
    auto d = *cuda->mem_alloc(bytes);
    cuda->pop_context();
    cuda->release_context(0);
    auto* p = reinterpret_cast<unsigned char*>(d);
    for (size_t i = 0; i < bytes; ++i)
      p[i] = static_cast<unsigned char>((i * 31 + seed) % 251);
    return d;
  }
  copy_result to_host(device_ptr d, char* host, size_t bytes,
                      std::chrono::steady_clock::time_point deadline
                      = std::chrono::steady_clock::time_point::max()) {
    copy_job j;
    j.direction = copy_direction::to_host;
    j.device = d;
    j.host = host;
    j.bytes = bytes;
    j.deadline = deadline;
    return stager->copy(0, j);
  }
  copy_result to_device(device_ptr d, char* host, size_t bytes) {
    copy_job j;
    j.direction = copy_direction::to_device;
    j.device = d;
    j.host = host;
    j.bytes = bytes;
    return stager->copy(0, j);
  }
  std::shared_ptr<fake_cuda> cuda;
  std::unique_ptr<local_stager> stager;
};

TEST_F(CudaStagedCopy, DeviceBytesArriveWithTheGuardBytesAroundThemUntouched) {
  const size_t n = 3 * chunk + 17; // a tail shorter than a chunk
  auto d = device_with(n, 3);
  std::vector<char> host(n + 128, guard);
  auto r = to_host(d, host.data() + 64, n);
  ASSERT_FALSE(r.error) << ferry::describe(r.error);
  EXPECT_EQ(r.completed, n);
  EXPECT_EQ(r.pieces, 7u); // half-chunk pieces: six and the tail
  EXPECT_EQ(0, std::memcmp(host.data() + 64, reinterpret_cast<void*>(d), n));
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(host[i], guard);
    EXPECT_EQ(host[64 + n + i], guard);
  }
  EXPECT_EQ(stager->stats().bytes_to_host, n);
}

TEST_F(CudaStagedCopy, HostBytesReachTheDeviceAndComeBackTheSame) {
  const size_t n = 5 * chunk - 1;
  std::vector<char> src(n);
  std::iota(src.begin(), src.end(), 0);
  auto d = device_with(n + 64, 0);
  std::memset(reinterpret_cast<char*>(d) + n, guard, 64);
  auto w = to_device(d, src.data(), n);
  ASSERT_FALSE(w.error) << ferry::describe(w.error);
  std::vector<char> back(n);
  ASSERT_FALSE(to_host(d, back.data(), n).error);
  EXPECT_EQ(back, src);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(reinterpret_cast<char*>(d)[n + i], guard);
  EXPECT_EQ(stager->stats().bytes_to_device, n);
}

TEST_F(CudaStagedCopy, OneContextAndOneChunkServeManyCopiesAndTheCallersContextIsRestored) {
  auto d = device_with(2 * chunk, 1);
  std::vector<char> host(2 * chunk);
  for (int i = 0; i < 5; ++i)
    ASSERT_FALSE(to_host(d, host.data(), host.size()).error);
  EXPECT_EQ(cuda->calls("retain_context"), 2u); // the fixture's, then the stager's once
  auto s = stager->stats();
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.reuses, 4u);
  EXPECT_EQ(s.idle, 1u);
  EXPECT_EQ(cuda->current_context(), 0u);
  EXPECT_EQ(cuda->live().context_depth, 0u);
}

TEST_F(CudaStagedCopy, TheDeviceFillsOneHalfWhileTheHostDrainsTheOther) {
  auto d = device_with(4 * chunk, 5);
  std::vector<char> host(4 * chunk);
  cuda->hold_events(true); // no piece completes yet
  copy_result r;
  std::thread copier{[&] { r = to_host(d, host.data(), host.size()); }};
  // Both halves are issued before the first one completes.
  EXPECT_TRUE(eventually([&] { return cuda->calls("copy_to_host") == 2; })); // (a third waits for a half to drain)
  cuda->hold_events(false);
  copier.join();
  ASSERT_FALSE(r.error) << ferry::describe(r.error);
  EXPECT_EQ(0, std::memcmp(host.data(), reinterpret_cast<void*>(d), host.size()));
}

TEST_F(CudaStagedCopy, APassedDeadlineFailsAtTheFirstBoundaryWithZeroBytesAndTheChunkReturns) {
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk, guard);
  auto r = to_host(d, host.data(), chunk, std::chrono::steady_clock::now() - 1ms);
  ASSERT_TRUE(r.error);
  EXPECT_TRUE(ferry::is(r.error, ferry::errc::timeout));
  EXPECT_EQ(r.completed, 0u);
  EXPECT_EQ(host[0], guard); // nothing ran
  EXPECT_EQ(stager->stats().idle, 1u);
}

TEST_F(CudaStagedCopy, ADeadlinePassingMidwayEndsTheCopyAtAPieceBoundaryWithZeroBytes) {
  auto d = device_with(8 * chunk, 2);
  std::vector<char> host(8 * chunk, guard);
  auto deadline = std::chrono::steady_clock::now() + 50ms;
  cuda->hold_events(true); // the first pieces wait until the deadline passed
  copy_result r;
  std::thread copier{[&] { r = to_host(d, host.data(), host.size(), deadline); }};
  ASSERT_TRUE(eventually([&] { return cuda->calls("event_query") > 0; }));
  ASSERT_TRUE(eventually([&] { return std::chrono::steady_clock::now() > deadline; }));
  cuda->hold_events(false);
  copier.join();
  ASSERT_TRUE(r.error);
  EXPECT_TRUE(ferry::is(r.error, ferry::errc::timeout));
  EXPECT_EQ(r.completed, 0u);          // all or nothing...
  EXPECT_GE(r.pieces, 1u);             // ...though a prefix was copied
  EXPECT_EQ(host[0], reinterpret_cast<char*>(d)[0]);
  EXPECT_EQ(host.back(), guard);       // and the rest never was
  EXPECT_TRUE(r.chunk_ok);             // what was in flight drained first
  EXPECT_EQ(stager->stats().idle, 1u);
}

TEST_F(CudaStagedCopy, CloseDuringACopyLeavesItsChunkAloneAndTheNextCloseFreesIt) {
  auto d = device_with(2 * chunk, 4);
  std::vector<char> host(2 * chunk);
  cuda->hold_events(true);
  copy_result r;
  std::thread copier{[&] { r = to_host(d, host.data(), host.size()); }};
  ASSERT_TRUE(eventually([&] { return cuda->calls("event_query") > 0; }));
  stager->close(); // the chunk is active: not closed under the copy
  EXPECT_EQ(stager->stats().active, 1u);
  EXPECT_EQ(cuda->calls("host_unregister"), 0u);
  cuda->hold_events(false);
  copier.join();
  ASSERT_FALSE(r.error) << ferry::describe(r.error);
  EXPECT_EQ(0, std::memcmp(host.data(), reinterpret_cast<void*>(d), host.size()));
  stager->close();
  EXPECT_EQ(stager->stats().counted(), 0u);
  EXPECT_EQ(cuda->live().registrations, 0u);
}

TEST_F(CudaStagedCopy, AFailedFreeOnCloseKeepsTheChunkRetainedWithItsMemory) {
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error);
  cuda->fail("host_unregister", 1);
  stager->close();
  EXPECT_EQ(stager->stats().retained, 1u);
  EXPECT_EQ(cuda->live().registrations, 1u); // never unmapped under it
  stager->close(); // a retained chunk is not freed again
  EXPECT_EQ(cuda->calls("host_unregister"), 1u);
}

TEST_F(CudaStagedCopy, AFailureMidwayReportsZeroCompletedBytes) {
  auto d = device_with(4 * chunk, 1);
  std::vector<char> host(4 * chunk);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error); // the chunk exists
  cuda->fail("copy_to_host", 1);
  // The first piece fails to queue: nothing in flight, the chunk is fine.
  auto r = to_host(d, host.data(), 4 * chunk);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.completed, 0u);
  EXPECT_TRUE(r.chunk_ok);
  EXPECT_EQ(stager->stats().idle, 1u);
}

TEST_F(CudaStagedCopy, AFailedEventQueryKeepsTheChunkRetainedAndCharged) {
  auto d = device_with(2 * chunk, 1);
  std::vector<char> host(2 * chunk);
  cuda->fail("event_query", 1);
  auto r = to_host(d, host.data(), host.size());
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.completed, 0u);
  EXPECT_FALSE(r.chunk_ok);
  auto s = stager->stats();
  EXPECT_EQ(s.retained, 1u);
  EXPECT_EQ(s.idle, 0u);
  EXPECT_EQ(cuda->live().context_depth, 0u); // the context was still restored
}

TEST_F(CudaStagedCopy, AFailedContextRestoreKeepsTheChunk) {
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error);
  cuda->fail("pop_context", 1);
  to_host(d, host.data(), chunk);
  EXPECT_EQ(stager->stats().retained, 1u);
  cuda->pop_context(); // the fixture restores what the failed pop left
}

TEST_F(CudaStagedCopy, ACleanAllocationFailureChargesNothingAndLeaksNothing) {
  cuda->fail("event_create", 1); // after registration and the stream
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  auto r = to_host(d, host.data(), chunk);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(stager->stats().counted(), 0u);
  auto live = cuda->live();
  EXPECT_EQ(live.registrations, 0u);
  EXPECT_EQ(live.streams, 0u);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error); // and the next one works
}

TEST_F(CudaStagedCopy, AFailedCleanupOfAPartialAllocationKeepsItsCharge) {
  cuda->fail("event_create", 1);
  cuda->fail("stream_destroy", 1); // undoing the stream fails too
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  EXPECT_TRUE(to_host(d, host.data(), chunk).error);
  EXPECT_EQ(stager->stats().retained, 1u);
  EXPECT_EQ(cuda->live().registrations, 1u); // never unmapped under it
}

TEST_F(CudaStagedCopy, ExhaustionAnswersAtOnceWhileEveryChunkIsBusy) {
  make(small_pool(1));
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error);
  // The only chunk is lost to a copy that did not drain (retained, still
  // charged): the next copy is refused at once, not made to wait.
  cuda->fail("event_query", 1);
  EXPECT_TRUE(to_host(d, host.data(), chunk).error);
  auto r = to_host(d, host.data(), chunk);
  ASSERT_TRUE(r.error);
  EXPECT_TRUE(ferry::is(r.error, ferry::errc::resource_exhausted));
  EXPECT_EQ(stager->stats().exhausted, 1u);
}

TEST_F(CudaStagedCopy, CloseFreesIdleChunksWithEverythingNativeAndKeepsRetainedOnes) {
  make(small_pool(2));
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error);
  EXPECT_EQ(cuda->live().registrations, 1u);
  stager->close();
  auto live = cuda->live();
  EXPECT_EQ(live.registrations, 0u);
  EXPECT_EQ(live.streams, 0u);
  EXPECT_EQ(live.events, 0u);
  EXPECT_EQ(stager->stats().counted(), 0u);
  stager->close(); // again: nothing is freed twice
  EXPECT_EQ(cuda->calls("host_unregister"), 1u);
}

TEST_F(CudaStagedCopy, ConcurrentCopiesEachGetTheirOwnChunk) {
  make(small_pool(4));
  auto d = device_with(8 * chunk, 9);
  std::vector<std::vector<char>> hosts(4, std::vector<char>(8 * chunk));
  std::vector<std::thread> threads;
  std::vector<copy_result> results(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] { results[t] = to_host(d, hosts[t].data(), 8 * chunk); });
  for (auto& t : threads)
    t.join();
  for (int t = 0; t < 4; ++t) {
    ASSERT_FALSE(results[t].error) << ferry::describe(results[t].error);
    EXPECT_EQ(0, std::memcmp(hosts[t].data(), reinterpret_cast<void*>(d), 8 * chunk));
  }
  EXPECT_LE(stager->stats().allocations, 4u);
  EXPECT_EQ(stager->stats().bytes_to_host, 32 * chunk);
}

TEST_F(CudaStagedCopy, CpuZeroChunksAreBoundToNodeZeroOnThisMachine) {
  make(small_pool(2, "cpu:0"));
  auto where = stager->placement(0);
  ASSERT_TRUE(where) << ferry::describe(where.error());
  EXPECT_EQ(*where->node, 0);
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  ASSERT_FALSE(to_host(d, host.data(), chunk).error);
  EXPECT_EQ(0, std::memcmp(host.data(), reinterpret_cast<void*>(d), chunk));
}

TEST_F(CudaStagedCopy, AnAbsentNodeFailsBeforeAnythingIsAllocated) {
  make(small_pool(2, "cpu:63"));
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  auto regs = cuda->calls("host_register");
  auto r = to_host(d, host.data(), chunk);
  ASSERT_TRUE(r.error);
  EXPECT_NE(ferry::describe(r.error).find("cpu:63"), std::string::npos);
  EXPECT_EQ(cuda->calls("host_register"), regs);
  EXPECT_EQ(stager->stats().counted(), 0u);
}

TEST_F(CudaStagedCopy, AutoWithUnknownGpuLocalityTakesTheLowestEligibleNodeAsNotTheGpus) {
  namespace fs = std::filesystem;
  auto root = fs::temp_directory_path() / ("ferry-sysfs-stager-" + std::to_string(getpid()));
  fs::create_directories(root / "bus/pci/devices/0000:3b:00.0");
  std::ofstream{root / "bus/pci/devices/0000:3b:00.0/numa_node"} << "-1\n";
  make(small_pool(2, "auto"), local_stager::options{root.string()});
  auto where = stager->placement(0);
  ASSERT_TRUE(where) << ferry::describe(where.error());
  EXPECT_EQ(*where->node, 0); // this machine's lowest eligible node...
  EXPECT_FALSE(where->gpu_local); // ...not claimed as the GPU's
  fs::remove_all(root);
}

TEST_F(CudaStagedCopy, AutoWithAnUnreadableLocalityIsAnErrorNotAny) {
  make(small_pool(2, "auto"), local_stager::options{"/nonexistent-sysfs"});
  auto d = device_with(chunk, 1);
  std::vector<char> host(chunk);
  auto r = to_host(d, host.data(), chunk);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(stager->stats().counted(), 0u);
}

} // namespace
