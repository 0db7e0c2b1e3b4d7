// The fake CUDA behaves like the driver where staging depends on it: a copy
// is not done before its event says so, calls need a current context, and
// copies touch only registered host memory.
#include "staging/fake_cuda.hpp"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/errors.hpp"

namespace {

using namespace ferry::staging;

struct CudaFake : ::testing::Test {
  void SetUp() override {
    ctx = *cuda.retain_context(0);
    ASSERT_FALSE(cuda.push_context(ctx));
  }
  void TearDown() override {
    cuda.pop_context();
    cuda.release_context(0);
  }
  fake_cuda cuda;
  cuda_context ctx = 0;
};

TEST_F(CudaFake, ACopyIsNotDoneUntilItsEventCompletes) {
  std::vector<char> host(4096, 0);
  ASSERT_FALSE(cuda.host_register(host.data(), host.size()));
  auto dev = *cuda.mem_alloc(4096);
  std::memset(reinterpret_cast<void*>(dev), 'd', 4096);
  auto s = *cuda.stream_create();
  auto e = *cuda.event_create();
  ASSERT_FALSE(cuda.copy_to_host(host.data(), dev, 4096, s));
  ASSERT_FALSE(cuda.event_record(e, s));
  EXPECT_EQ(*cuda.event_query(e), event_state::not_ready);
  EXPECT_EQ(host[0], 0); // stale until complete
  EXPECT_EQ(*cuda.event_query(e), event_state::not_ready);
  EXPECT_EQ(*cuda.event_query(e), event_state::complete);
  EXPECT_EQ(host[4095], 'd');
  EXPECT_FALSE(cuda.event_destroy(e));
  EXPECT_FALSE(cuda.stream_destroy(s));
  EXPECT_FALSE(cuda.host_unregister(host.data()));
  EXPECT_FALSE(cuda.mem_free(dev));
  auto live = cuda.live();
  EXPECT_EQ(live.allocations + live.registrations + live.streams + live.events, 0u);
}

TEST_F(CudaFake, CallsNeedACurrentContext) {
  ASSERT_FALSE(cuda.pop_context());
  auto s = cuda.stream_create();
  ASSERT_FALSE(s);
  EXPECT_NE(ferry::describe(s.error()).find("no current context"), std::string::npos);
  ASSERT_FALSE(cuda.push_context(ctx));
}

TEST_F(CudaFake, CopiesTouchOnlyRegisteredHostMemoryAndOneDeviceAllocation) {
  std::vector<char> host(8192);
  auto dev = *cuda.mem_alloc(4096);
  auto s = *cuda.stream_create();
  EXPECT_TRUE(cuda.copy_to_host(host.data(), dev, 4096, s)); // not registered
  ASSERT_FALSE(cuda.host_register(host.data(), 4096));
  EXPECT_TRUE(cuda.host_register(host.data() + 100, 64)); // overlaps
  EXPECT_TRUE(cuda.copy_to_host(host.data(), dev, 8192, s)); // past both
  EXPECT_TRUE(cuda.copy_to_device(dev + 1, host.data(), 4096, s)); // past the allocation
  EXPECT_FALSE(cuda.copy_to_device(dev, host.data(), 4096, s));
  cuda.stream_destroy(s);
  cuda.host_unregister(host.data());
  cuda.mem_free(dev);
}

TEST_F(CudaFake, AnyCallFailsOnDemandAndIsCounted) {
  cuda.fail("stream_create", 2);
  EXPECT_FALSE(cuda.stream_create());
  auto second = cuda.stream_create();
  ASSERT_FALSE(second);
  EXPECT_TRUE(ferry::is(second.error(), ferry::errc::cuda_error));
  auto third = cuda.stream_create();
  ASSERT_TRUE(third);
  EXPECT_EQ(cuda.calls("stream_create"), 3u);
  cuda.fail("event_query", -1);
  auto e = *cuda.event_create();
  EXPECT_FALSE(cuda.event_query(e));
  EXPECT_FALSE(cuda.event_query(e));
  cuda.heal("event_query");
  EXPECT_TRUE(cuda.event_query(e));
  cuda.event_destroy(e);
  cuda.stream_destroy(*third);
}

} // namespace
