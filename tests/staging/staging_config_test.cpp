// The chunk pool's configuration is checked at start, before anything is
// allocated, with messages that name the option.
#include "staging/staging_config.hpp"

#include <gtest/gtest.h>

namespace {

using namespace ferry::staging;
constexpr uint64_t MiB = 1ull << 20;

TEST(CudaStagingConfig, TheDefaultsAreValid) {
  staging_config c;
  EXPECT_EQ(c.chunk_size, 4 * MiB);
  EXPECT_EQ(c.chunk_count, 64u);
  EXPECT_EQ(c.location.k, staging_location::kind::any);
  EXPECT_EQ(c.check(), "");
}

TEST(CudaStagingConfig, ChunkSizeAndCountOutOfRangeAreRefusedNamingTheOption) {
  staging_config c;
  c.chunk_size = 0;
  EXPECT_NE(c.check().find("--staging-chunk-size"), std::string::npos);
  c.chunk_size = 64 * MiB + 1;
  EXPECT_NE(c.check().find("--staging-chunk-size"), std::string::npos);
  c.chunk_size = 64 * MiB;
  c.chunk_count = 16;
  EXPECT_EQ(c.check(), ""); // exactly 1 GiB
  c.chunk_count = 17;
  EXPECT_NE(c.check().find("1 GiB"), std::string::npos);
  c.chunk_size = 4 * MiB;
  c.chunk_count = 4097;
  EXPECT_NE(c.check().find("--staging-chunk-count"), std::string::npos);
  c.chunk_count = 0;
  EXPECT_NE(c.check().find("--staging-chunk-count"), std::string::npos);
}

TEST(CudaStagingConfig, NumaPagePaddingCountsAgainstTheGibiByte) {
  staging_config c;
  c.chunk_size = 256 * 1024;
  c.chunk_count = 4096; // 1 GiB exactly with 4 KiB pages
  EXPECT_EQ(c.check(), "");
  c.location = *staging_location::parse("cpu:0"); // each chunk padded to 2 MiB
  EXPECT_EQ(c.physical_chunk_bytes(), 2 * MiB);
  EXPECT_NE(c.check().find("page padding"), std::string::npos);
}

TEST(CudaStagingConfig, LocationsParse) {
  EXPECT_EQ(staging_location::parse("any")->k, staging_location::kind::any);
  EXPECT_EQ(staging_location::parse("auto")->k, staging_location::kind::automatic);
  auto cpu = staging_location::parse("cpu:3");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->node, 3);
  EXPECT_EQ(cpu->to_string(), "cpu:3");
  for (auto bad : {"", "cpu:", "cpu:-1", "cpu:x", "gpu:0", "*", "cpu:99999"})
    EXPECT_FALSE(staging_location::parse(bad)) << bad;
}

} // namespace
