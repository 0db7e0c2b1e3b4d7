// NUMA placement: the selection rules as a pure function, the GPU's
// locality from a sysfs fixture, and real libnuma binding on this machine.
#include "staging/numa_placement.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "protocol/errors.hpp"

namespace {

using namespace ferry::staging;
namespace fs = std::filesystem;

staging_location at(const char* text) {
  return *staging_location::parse(text);
}

TEST(CudaNumaSelection, AnyMakesNoPlacementClaim) {
  auto c = select_staging_node(at("any"), numa_view{{0, 1}}, 1);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->node);
}

TEST(CudaNumaSelection, CpuNIsRequiredAndAnAbsentNodeIsAnErrorNamingIt) {
  auto ok = select_staging_node(at("cpu:1"), numa_view{{0, 1}}, std::nullopt);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok->node, 1);
  auto absent = select_staging_node(at("cpu:2"), numa_view{{0, 1}}, std::nullopt);
  ASSERT_FALSE(absent);
  auto text = ferry::describe(absent.error());
  EXPECT_NE(text.find("cpu:2"), std::string::npos) << text;
  EXPECT_NE(text.find("0,1"), std::string::npos) << text;
}

TEST(CudaNumaSelection, AutoPrefersTheGpusNodeElseTheLowestEligibleNeverAssumingZero) {
  auto local = select_staging_node(at("auto"), numa_view{{0, 1}}, 1);
  ASSERT_TRUE(local);
  EXPECT_EQ(*local->node, 1);
  EXPECT_TRUE(local->gpu_local);
  // Unknown locality: the lowest eligible node, and no claim that it is the GPU's.
  auto unknown = select_staging_node(at("auto"), numa_view{{2, 3}}, std::nullopt);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(*unknown->node, 2);
  EXPECT_FALSE(unknown->gpu_local);
  // The GPU's node not allowed to this thread: the lowest eligible one.
  auto elsewhere = select_staging_node(at("auto"), numa_view{{0}}, 1);
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(*elsewhere->node, 0);
  EXPECT_FALSE(elsewhere->gpu_local);
}

TEST(CudaNumaSelection, AnEmptyEligibleSetIsAnErrorNotAny) {
  EXPECT_FALSE(select_staging_node(at("auto"), numa_view{}, std::nullopt));
  EXPECT_FALSE(select_staging_node(at("cpu:0"), numa_view{}, std::nullopt));
}

struct CudaGpuLocality : ::testing::Test {
  void SetUp() override {
    root = fs::temp_directory_path() / ("ferry-sysfs-" + std::to_string(getpid()));
    fs::remove_all(root);
  }
  void TearDown() override { fs::remove_all(root); }
  void device(const std::string& id, const std::string& numa_node) {
    auto dir = root / "bus/pci/devices" / id;
    fs::create_directories(dir);
    std::ofstream{dir / "numa_node"} << numa_node << "\n";
  }
  fs::path root;
};

TEST_F(CudaGpuLocality, TheNodeComesFromSysfsByTheLowerCasePciAddress) {
  device("0000:3b:00.0", "1");
  auto n = gpu_numa_node("0000:3B:00.0", root.string());
  ASSERT_TRUE(n) << ferry::describe(n.error());
  EXPECT_EQ(**n, 1);
}

TEST_F(CudaGpuLocality, MinusOneIsUnknownAndAMissingDeviceIsAnError) {
  device("0000:af:00.0", "-1");
  auto unknown = gpu_numa_node("0000:af:00.0", root.string());
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(*unknown);
  EXPECT_FALSE(gpu_numa_node("0000:01:00.0", root.string()));
  EXPECT_FALSE(gpu_numa_node("../../etc", root.string()));
}

TEST(CudaNumaBinding, ThisMachinesNodeZeroIsEligibleAndBoundPagesLandThere) {
  auto view = read_numa_view();
  ASSERT_TRUE(view) << ferry::describe(view.error());
  ASSERT_FALSE(view->eligible.empty());
  EXPECT_EQ(view->eligible.front(), 0);
  auto m = bound_mapping::map(4 << 20, 0);
  ASSERT_TRUE(m) << ferry::describe(m.error());
  EXPECT_EQ(m->size() % static_cast<size_t>(sysconf(_SC_PAGESIZE)), 0u);
  for (size_t off = 0; off < m->size(); off += 4096)
    m->data()[off] = 1; // first touch, after the binding
  for (size_t off : {size_t{0}, m->size() / 2, m->size() - 1}) {
    auto node = node_of_page(m->data() + off);
    ASSERT_TRUE(node) << ferry::describe(node.error());
    EXPECT_EQ(*node, 0);
  }
}

TEST(CudaNumaBinding, ANodeThatDoesNotExistCannotBeBound) {
  auto view = read_numa_view();
  ASSERT_TRUE(view);
  int absent = view->eligible.back() + 1;
  EXPECT_FALSE(bound_mapping::map(1 << 20, absent));
  EXPECT_FALSE(select_staging_node(at(("cpu:" + std::to_string(absent)).c_str()), *view,
                                   std::nullopt));
}

} // namespace
