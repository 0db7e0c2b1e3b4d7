// The real driver backend on a machine without a driver: ferry still runs,
// and the api says why staging is off; every call fails cleanly.
#include "staging/cuda_driver.hpp"

#include <gtest/gtest.h>

#include "protocol/errors.hpp"

namespace {

using namespace ferry::staging;

TEST(CudaDriver, WithoutADriverStagingIsOffAndSaysWhy) {
  auto api = load_cuda_driver("libcuda-that-is-not-here.so.1");
  EXPECT_STREQ(api->backend(), "driver");
  auto why = api->unavailable_reason();
  EXPECT_NE(why, "");
  EXPECT_NE(why.find("libcuda-that-is-not-here.so.1"), std::string::npos) << why;
  auto n = api->device_count();
  ASSERT_FALSE(n);
  EXPECT_TRUE(ferry::is(n.error(), ferry::errc::staging_unavailable));
  EXPECT_TRUE(api->push_context(1));
}

TEST(CudaDriver, TheToolkitsStubDriverLoadsButReportsNoUsableDevice) {
  // The stub libcuda resolves every entry point, but cuInit fails: the
  // reason names the call and the library.
  auto api = load_cuda_driver(FERRY_CUDA_STUB);
  auto why = api->unavailable_reason();
#ifdef FERRY_WITH_CUDA
  EXPECT_NE(why.find("cuInit"), std::string::npos) << why;
#else
  EXPECT_NE(why.find("without the CUDA toolkit"), std::string::npos) << why;
#endif
}

TEST(CudaDriver, TheDefaultLibraryOnThisMachineIsUnavailableNotACrash) {
  auto api = load_cuda_driver();
  // This machine has no driver: staging is off; on a GPU machine it is on.
  if (api->unavailable_reason().empty())
    GTEST_SKIP() << "a CUDA driver is installed here";
  EXPECT_FALSE(api->retain_context(0));
}

} // namespace
