// External regions and their registry over a fake mapping: anchors and the
// gate, the copy gate and the latch, unregister drained / timed out, the
// budget shared in whole pages, the shutdown sweep, and a registry torn
// down with regions left.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>

#include "rdma/region_registry.hpp"

using namespace ferry;
using namespace std::chrono_literals;

namespace {

/// A mapping that records whether it is still "mapped" (alive).
struct fake_mapping : mapped_region {
  fake_mapping(char* p, uint64_t n, int* live) : p(p), n(n), live(live) { ++*live; }
  ~fake_mapping() override { --*live; }
  char* data() const override { return p; }
  uint64_t size() const override { return n; }
  uint64_t address() const override { return reinterpret_cast<uintptr_t>(p); }
  const std::vector<uint8_t>& rkey() const override { return key; }
  uint64_t pinned_bytes() const override { return n; }
  char* p;
  uint64_t n;
  int* live;
  std::vector<uint8_t> key{9, 8, 7};
};

struct RegionRegistry : ::testing::Test {
  RegionRegistry() : budget(64 * 4096), memory(10 * 4096) {
    std::iota(memory.begin(), memory.end(), 0);
    registry = std::make_unique<region_registry>(
      budget, [this](char* p, uint64_t n)
                -> std::variant<std::unique_ptr<mapped_region>, std::string> {
        if (refuse)
          return std::string{"refused"};
        return std::make_unique<fake_mapping>(p, n, &live);
      });
  }

  /// A region over memory[offset, offset + len).
  external_region_ptr region_at(uint64_t offset, uint64_t len) {
    return std::make_shared<external_region>(memory.data() + offset, len);
  }

  registered_budget budget;
  std::vector<char> memory;
  std::unique_ptr<region_registry> registry;
  bool refuse = false;
  int live = 0;
  region_registry::clock_type::time_point t0 = region_registry::clock_type::now();
};

TEST_F(RegionRegistry, RegisterChargesWholePagesAndMaps) {
  auto r = region_at(100, 5000); // spans two pages
  auto id = registry->register_region(r);
  ASSERT_TRUE(std::holds_alternative<uint64_t>(id));
  EXPECT_TRUE(r->mapped());
  EXPECT_EQ(live, 1);
  EXPECT_EQ(r->pinned_bytes() % 4096, 0u);
  EXPECT_GE(r->pinned_bytes(), 5000u);
  EXPECT_EQ(budget.used(), r->pinned_bytes());
  EXPECT_EQ(r->rkey()->size(), 3u);
  EXPECT_EQ(registry->registrations(), 1u);
}

TEST_F(RegionRegistry, OverTheBudgetIsRefusedAndNothingCharged) {
  registered_budget small(4096);
  region_registry reg{small, [this](char* p, uint64_t n)
                               -> std::variant<std::unique_ptr<mapped_region>, std::string> {
                        return std::make_unique<fake_mapping>(p, n, &live);
                      }};
  auto r = region_at(0, 3 * 4096);
  auto res = reg.register_region(r);
  ASSERT_TRUE(std::holds_alternative<region_registry::refused>(res));
  EXPECT_EQ(std::get<region_registry::refused>(res).why, region_registry::refusal::budget);
  EXPECT_EQ(small.used(), 0u);
  EXPECT_FALSE(r->mapped());
}

TEST_F(RegionRegistry, AFailedMapGivesTheBudgetBack) {
  refuse = true;
  auto res = registry->register_region(region_at(0, 4096));
  ASSERT_TRUE(std::holds_alternative<region_registry::refused>(res));
  EXPECT_EQ(std::get<region_registry::refused>(res).why,
            region_registry::refusal::map_failed);
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(RegionRegistry, UnregisterWithoutAnchorsDrainsAtOnce) {
  auto r = region_at(0, 8192);
  registry->register_region(r);
  registry->begin_unregister(r, t0 + 1s);
  EXPECT_FALSE(registry->progress(t0));
  EXPECT_TRUE(r->released());
  EXPECT_EQ(r->wait_released(0ms), external_region::outcome::drained);
  EXPECT_EQ(live, 0);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(registry->live(), 0u);
}

TEST_F(RegionRegistry, UnregisterWaitsForAnchorsThenTimesOut) {
  auto r = region_at(0, 8192);
  registry->register_region(r);
  auto a = r->try_anchor();
  ASSERT_TRUE(a);
  registry->begin_unregister(r, t0 + 100ms);
  EXPECT_TRUE(r->gated());
  EXPECT_FALSE(r->try_anchor()) << "the gate refuses new anchors";
  EXPECT_TRUE(registry->progress(t0 + 50ms)) << "still waiting for the anchor";
  EXPECT_FALSE(r->released());
  char byte = 0;
  EXPECT_TRUE(r->copy_out(5, 1, &byte)) << "copies work until the latch";
  EXPECT_EQ(byte, 5);
  EXPECT_FALSE(registry->progress(t0 + 100ms));
  EXPECT_EQ(r->wait_released(0ms), external_region::outcome::drain_timed_out);
  EXPECT_EQ(live, 0);
  EXPECT_FALSE(r->copy_out(5, 1, &byte)) << "copies are refused after the latch";
  a.reset();
  EXPECT_EQ(r->in_flight(), 0u);
}

TEST_F(RegionRegistry, UnregisterDrainsWhenTheLastAnchorGoes) {
  auto r = region_at(0, 8192);
  registry->register_region(r);
  auto a = r->try_anchor();
  registry->begin_unregister(r, t0 + 10s);
  EXPECT_TRUE(registry->progress(t0));
  a.reset();
  EXPECT_FALSE(registry->progress(t0 + 1ms));
  EXPECT_EQ(r->wait_released(0ms), external_region::outcome::drained);
}

TEST_F(RegionRegistry, CopyOutChecksTheRange) {
  auto r = region_at(0, 100);
  registry->register_region(r);
  std::vector<char> out(100);
  EXPECT_TRUE(r->copy_out(0, 100, out.data()));
  EXPECT_FALSE(r->copy_out(1, 100, out.data()));
  EXPECT_FALSE(r->copy_out(~0ull, 2, out.data()));
}

TEST_F(RegionRegistry, ALatchWaitsForACopyInProgress) {
  // A copy and the latch from two threads: whichever order they run in, a
  // copy either completes whole before the latch or is refused after it.
  auto r = region_at(0, 40000);
  registry->register_region(r);
  std::vector<char> out(40000);
  std::atomic<bool> go{false};
  std::vector<int> results;
  std::thread reader([&] {
    while (!go) {
    }
    for (int i = 0; i < 200; ++i)
      results.push_back(r->copy_out(0, out.size(), out.data()) ? 1 : 0);
  });
  go = true;
  r->latch();
  reader.join();
  // Once refused, never accepted again.
  auto first_refused = std::find(results.begin(), results.end(), 0);
  EXPECT_TRUE(std::all_of(first_refused, results.end(), [](int v) { return v == 0; }));
  EXPECT_FALSE(r->copy_out(0, 1, out.data()));
}

TEST_F(RegionRegistry, TheShutdownSweepGatesAndUnregistersEverything) {
  auto r1 = region_at(0, 4096);
  auto r2 = region_at(4096, 4096);
  registry->register_region(r1);
  registry->register_region(r2);
  auto a = r2->try_anchor();
  registry->gate_all(t0 + 100ms);
  auto late = registry->register_region(region_at(8192, 4096));
  ASSERT_TRUE(std::holds_alternative<region_registry::refused>(late));
  EXPECT_EQ(std::get<region_registry::refused>(late).why,
            region_registry::refusal::draining);
  EXPECT_TRUE(registry->progress(t0));
  EXPECT_TRUE(r1->released());
  EXPECT_FALSE(r2->released());
  EXPECT_FALSE(registry->progress(t0 + 100ms));
  EXPECT_EQ(r2->wait_released(0ms), external_region::outcome::drain_timed_out);
  EXPECT_FALSE(registry->all_drained());
  EXPECT_EQ(live, 0);
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(RegionRegistry, ATornDownRegistryReleasesWhatIsLeft) {
  auto r = region_at(0, 4096);
  registry->register_region(r);
  registry.reset();
  EXPECT_EQ(live, 0);
  EXPECT_EQ(r->wait_released(0ms), external_region::outcome::drain_timed_out);
}

TEST_F(RegionRegistry, OwnedBufferComesBackOnlyWhenReleasedOrNeverMapped) {
  std::vector<char> buf(4096, 'x');
  auto* p = buf.data();
  auto r = std::make_shared<external_region>(p, 4096, std::move(buf));
  EXPECT_EQ(r->take_unregistered_owned().size(), 4096u) << "never mapped";
  std::vector<char> buf2(4096, 'y');
  auto* p2 = buf2.data();
  auto r2 = std::make_shared<external_region>(p2, 4096, std::move(buf2));
  registry->register_region(r2);
  EXPECT_TRUE(r2->take_owned().empty()) << "not before the release";
  EXPECT_TRUE(r2->take_unregistered_owned().empty());
  registry->begin_unregister(r2, t0);
  registry->progress(t0);
  auto back = r2->take_owned();
  ASSERT_EQ(back.size(), 4096u);
  EXPECT_EQ(back.data(), p2);
  EXPECT_EQ(back[10], 'y');
}

} // namespace

TEST_F(RegionRegistry, TheHookSeesTheRegionGoneBeforeItsSignalResolves) {
  auto r = region_at(0, 8192);
  registry->register_region(r);
  int calls = 0;
  registry->set_before_release([&] {
    ++calls;
    EXPECT_FALSE(r->released()) << "the hook runs before the signal";
    EXPECT_EQ(live, 0) << "after the unmap";
    EXPECT_EQ(budget.used(), 0u) << "after the pages are back";
    EXPECT_EQ(registry->live(), 0u);
  });
  registry->begin_unregister(r, t0 + 1s);
  EXPECT_FALSE(registry->progress(t0));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r->released());
  // Teardown finishes what is left without calling the hook.
  auto left = region_at(0, 4096);
  registry->register_region(left);
  registry.reset();
  EXPECT_TRUE(left->released());
  EXPECT_EQ(calls, 1);
}
