// Remote staging on whichever CUDA backend the machine has (label
// remote_staging): one READ and one WRITE between this process and
// ferry_gpu_peer, with device memory written and read back only through
// direct copies, never through a host pointer. Here it runs on the fake;
// with FERRY_TEST_REAL_CUDA=1 (tests/gpu/run.sh on a GPU machine) both
// processes use the real driver, and a missing one is a failure.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "runtime/remote_staging.hpp"
#include "staging/direct_copy.hpp"
#include "staging/local_stager.hpp"
#include "tests/cluster/test_support.hpp"

namespace {

using namespace ferry;
using namespace std::chrono_literals;

bool real_driver() {
  const char* v = std::getenv("FERRY_TEST_REAL_CUDA");
  return v != nullptr && std::string{v} == "1";
}

std::string hex_checksum(const byte_buffer& b) {
  return checksum_text(checksum64(b.data(), b.size()));
}

} // namespace

TEST(RemoteStagingOnTheDriver, OneReadAndOneWriteBetweenTwoProcesses) {
  bool real = real_driver();
  std::vector<std::string> args{"--remote-staging", "true", "--staging-chunk-size", "1048576",
                                "--staging-pipeline-depth", "2", "--metrics-port", "0"};
  if (!real)
    args.push_back("--test-fake-cuda");
  test::node_process peer{args, {}, FERRY_GPU_PEER};
  node_config c;
  c.listen = false;
  c.test_fake_cuda = !real;
  c.staging_chunk_size = 1 * MiB;
  c.staging_pipeline_depth = 2;
  node local{c};
  ASSERT_FALSE(local.start());
  ASSERT_TRUE(local.stager()->unavailable_reason().empty())
    << "no CUDA here: " << local.stager()->unavailable_reason();
  auto hello = local.connect(peer.endpoint());
  ASSERT_TRUE(hello) << describe(hello.error());
  messenger_client m{local};
  // Five chunks and a short tail, two in flight.
  const uint64_t bytes = 5 * MiB + 4096;
  auto exposed = m.call(hello->worker_id, "test.expose", {},
                        {{"bytes", std::to_string(bytes)}, {"seed", "71"},
                         {"access", "read_write"}, {"kind", "device"}},
                        30s);
  ASSERT_TRUE(exposed) << describe(exposed.error());
  auto range = parse_remote_device_range(exposed->hdrs["range"]);
  ASSERT_TRUE(range);
  auto& api = local.stager()->api();
  auto ctx = api.retain_context(0);
  ASSERT_TRUE(ctx) << describe(ctx.error());
  {
    auto dst = staging::device_buffer::allocate(api, *ctx, bytes);
    ASSERT_TRUE(dst) << describe(dst.error());
    auto src = staging::device_buffer::allocate(api, *ctx, bytes);
    ASSERT_TRUE(src) << describe(src.error());
    // READ: the peer's device bytes into ours.
    auto read = remote_staging{local}.read(*range, 0, 0, dst->get(), bytes);
    ASSERT_FALSE(read.error) << describe(read.error);
    EXPECT_EQ(read.completed, bytes);
    byte_buffer back(bytes);
    ASSERT_FALSE(staging::direct_copy_plain_host(api, *ctx, staging::copy_direction::to_host,
                                                 dst->get(), back.data(), back.size()));
    EXPECT_EQ(hex_checksum(back), exposed->hdrs["checksum"]);
    // WRITE: a pattern of ours into the same range.
    auto pattern = test::payload(bytes, 72);
    ASSERT_FALSE(staging::direct_copy_plain_host(api, *ctx, staging::copy_direction::to_device,
                                                 src->get(), pattern.data(), pattern.size()));
    auto write = remote_staging{local}.write(*range, 0, 0, src->get(), bytes);
    ASSERT_FALSE(write.error) << describe(write.error);
    EXPECT_EQ(write.completed, bytes);
    auto there = m.call(hello->worker_id, "test.checksum", {},
                        {{"range", to_string(*range)}}, 30s);
    ASSERT_TRUE(there) << describe(there.error());
    EXPECT_EQ(there->hdrs["checksum"], hex_checksum(pattern));
    EXPECT_NE(there->hdrs["checksum"], exposed->hdrs["checksum"]);
  }
  api.release_context(0);
}
