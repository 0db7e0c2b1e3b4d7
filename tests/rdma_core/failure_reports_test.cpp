// Which peers' endpoints run with UCX failure reports
// (rdma/failure_reports_choice.hpp).
#include <gtest/gtest.h>

#include "rdma/failure_reports_choice.hpp"

using namespace ferry;

TEST(FailureReports, AreOffOnlyWhenBothNodesShareMemoryOnOneMachine) {
  auto here = shared_memory_capability("00000000000000aa");
  auto there = shared_memory_capability("00000000000000bb");
  EXPECT_FALSE(wants_failure_reports({"chunked", "ucx", here}, {"ucx", here}));
  EXPECT_TRUE(wants_failure_reports({"ucx", here}, {"ucx", there})) << "another machine";
  EXPECT_TRUE(wants_failure_reports({"ucx", here}, {"ucx"})) << "the peer runs tcp only";
  EXPECT_TRUE(wants_failure_reports({"ucx"}, {"ucx", here})) << "this node runs tcp only";
  EXPECT_TRUE(wants_failure_reports({"ucx"}, {"ucx"}));
}

TEST(FailureReports, TheMachineTokenIsStableAndTold) {
  auto token = this_machine_token();
  EXPECT_EQ(token.size(), 16u);
  EXPECT_EQ(token, this_machine_token());
  EXPECT_EQ(shared_memory_capability(token), "ucx_shm:" + token);
}
