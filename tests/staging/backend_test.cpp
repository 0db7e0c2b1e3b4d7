// Staged copies on every backend this machine has: always the fake, and
// the real driver where one is installed (tests/gpu/run.sh on a GPU
// machine; skipped here, saying why). Device bytes are written and read
// with direct pinned copies, so the checks need no view into the device.
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/errors.hpp"
#include "staging/cuda_driver.hpp"
#include "staging/direct_copy.hpp"
#include "staging/fake_cuda.hpp"
#include "staging/local_stager.hpp"

namespace {

using namespace ferry::staging;
constexpr size_t chunk = 1 << 20;
constexpr char guard = '\x5a';

std::vector<char> pattern(size_t n, unsigned seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<char>((i * 131 + seed) % 253);
  return v;
}

struct CudaBackend : ::testing::TestWithParam<const char*> {
  void SetUp() override {
    if (std::string{GetParam()} == "fake")
      api = std::make_shared<fake_cuda>();
    else
      api = std::shared_ptr<cuda_api>{load_cuda_driver()};
    if (auto why = api->unavailable_reason(); !why.empty())
      GTEST_SKIP() << "no " << GetParam() << " backend here: " << why;
    staging_config cfg;
    cfg.chunk_size = chunk;
    cfg.chunk_count = 4;
    stager = std::make_unique<local_stager>(api, cfg);
    ctx = *api->retain_context(0);
  }
  void TearDown() override {
    stager.reset();
    if (ctx)
      api->release_context(0);
  }

  /// Device memory of `n` bytes holding `bytes` (direct pinned copy).
  device_buffer device_holding(const std::vector<char>& bytes, size_t n) {
    auto d = device_buffer::allocate(*api, ctx, n);
    EXPECT_TRUE(d) << ferry::describe(d.error());
    auto copy = bytes;
    copy.resize(n, guard);
    EXPECT_FALSE(
      direct_copy_plain_host(*api, ctx, copy_direction::to_device, d->get(), copy.data(), n));
    return std::move(*d);
  }

  std::vector<char> device_bytes(const device_buffer& d) {
    std::vector<char> out(d.size());
    EXPECT_FALSE(direct_copy_plain_host(*api, ctx, copy_direction::to_host, d.get(), out.data(),
                                        out.size()));
    return out;
  }

  copy_result staged(copy_direction dir, device_ptr d, char* host, size_t n) {
    copy_job j;
    j.direction = dir;
    j.device = d;
    j.host = host;
    j.bytes = n;
    return stager->copy(0, j);
  }

  std::shared_ptr<cuda_api> api;
  std::unique_ptr<local_stager> stager;
  cuda_context ctx = 0;
};

TEST_P(CudaBackend, StagedToHostMatchesTheDeviceAtEveryTailAndLeavesTheGuards) {
  for (size_t n : {size_t{1}, chunk / 2 - 1, chunk / 2 + 1, chunk + 1, 3 * chunk + 4097}) {
    auto bytes = pattern(n, static_cast<unsigned>(n));
    auto d = device_holding(bytes, n);
    std::vector<char> host(n + 128, guard);
    auto r = staged(copy_direction::to_host, d.get(), host.data() + 64, n);
    ASSERT_FALSE(r.error) << n << ": " << ferry::describe(r.error);
    EXPECT_EQ(r.completed, n);
    EXPECT_EQ(0, std::memcmp(host.data() + 64, bytes.data(), n)) << n;
    for (size_t i = 0; i < 64; ++i) {
      ASSERT_EQ(host[i], guard) << n;
      ASSERT_EQ(host[64 + n + i], guard) << n;
    }
  }
}

TEST_P(CudaBackend, StagedToDeviceWritesExactlyTheRange) {
  const size_t n = 2 * chunk + 333;
  auto d = device_holding({}, n + 4096); // all guard bytes
  auto bytes = pattern(n, 7);
  auto r = staged(copy_direction::to_device, d.get(), bytes.data(), n);
  ASSERT_FALSE(r.error) << ferry::describe(r.error);
  auto back = device_bytes(d);
  EXPECT_EQ(0, std::memcmp(back.data(), bytes.data(), n));
  for (size_t i = n; i < back.size(); ++i)
    ASSERT_EQ(back[i], guard) << "past the range at " << i;
}

TEST_P(CudaBackend, RepeatedCopiesReuseOneChunkAndTheBytesCounterAddsUp) {
  auto bytes = pattern(3 * chunk, 1);
  auto d = device_holding(bytes, bytes.size());
  std::vector<char> host(bytes.size());
  for (int i = 0; i < 4; ++i)
    ASSERT_FALSE(staged(copy_direction::to_host, d.get(), host.data(), host.size()).error);
  auto s = stager->stats();
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.reuses, 3u);
  EXPECT_EQ(s.bytes_to_host, 4 * bytes.size());
  stager->close();
  EXPECT_EQ(stager->stats().counted(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, CudaBackend, ::testing::Values("fake", "driver"),
                         [](const auto& info) { return std::string{info.param}; });

} // namespace
