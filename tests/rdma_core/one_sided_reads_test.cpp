// Which pairs' UCX GETs are one-sided reads, and which UCX could only
// emulate over tcp (rdma/one_sided_reads.hpp).
#include <gtest/gtest.h>

#include "rdma/failure_reports_choice.hpp"
#include "rdma/one_sided_reads.hpp"

using namespace ferry;

namespace {

const std::string nic{nic_rma_capability};

} // namespace

TEST(OneSidedReads, SharedMemoryOnOneMachineReadsOneSided) {
  auto here = shared_memory_capability("00000000000000aa");
  EXPECT_TRUE(reads_one_sided({"chunked", "ucx", here}, {"ucx", here}));
  EXPECT_TRUE(shares_memory({"ucx", here}, {"ucx", here}));
}

TEST(OneSidedReads, APairWithNeitherSharedMemoryNorANicOnBothIsEmulated) {
  auto here = shared_memory_capability("00000000000000aa");
  auto there = shared_memory_capability("00000000000000bb");
  EXPECT_FALSE(reads_one_sided({"ucx"}, {"ucx"})) << "tcp on both";
  EXPECT_FALSE(reads_one_sided({"ucx", here}, {"ucx", there})) << "two machines, no NIC";
  EXPECT_FALSE(reads_one_sided({"ucx", here}, {"ucx"})) << "the peer runs tcp only";
  EXPECT_FALSE(reads_one_sided({"ucx", here, nic}, {"ucx", there}))
    << "a NIC on one side only";
  EXPECT_FALSE(reads_one_sided({"ucx"}, {"ucx", nic}));
}

TEST(OneSidedReads, ANicOnBothReadsOneSidedAcrossMachines) {
  auto here = shared_memory_capability("00000000000000aa");
  auto there = shared_memory_capability("00000000000000bb");
  EXPECT_TRUE(reads_one_sided({"ucx", here, nic}, {"ucx", there, nic}));
  EXPECT_TRUE(reads_one_sided({"ucx", nic}, {"ucx", nic}));
}

TEST(OneSidedReads, TheRuleIsTheSameFromEitherSide) {
  auto here = shared_memory_capability("00000000000000aa");
  std::vector<std::vector<std::string>> lists{
    {"ucx"}, {"ucx", here}, {"ucx", nic}, {"ucx", here, nic},
    {"ucx", shared_memory_capability("00000000000000bb"), nic}};
  for (const auto& a : lists)
    for (const auto& b : lists)
      EXPECT_EQ(reads_one_sided(a, b), reads_one_sided(b, a));
}

TEST(OneSidedReads, OnlyTheNicTransportsThatReadOneSidedCount) {
  for (const char* t : {"rc_verbs", "rc_mlx5", "dc_mlx5"})
    EXPECT_TRUE(is_nic_rma_transport(t)) << t;
  for (const char* t : {"tcp", "self", "posix", "sysv", "cma", "ud_verbs", "ud_mlx5", ""})
    EXPECT_FALSE(is_nic_rma_transport(t)) << t;
}
