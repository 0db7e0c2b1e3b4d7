// path_metrics: ferry_rendezvous_rdma_path_total{path, reason}, counted by
// both roles from their own threads, each series looked up once.
#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actors/rendezvous/path_metrics.hpp"

using namespace ferry;

namespace {

/// The family's series as a scrape would show them: "path/reason" -> value.
std::map<std::string, double> scraped(prometheus::Registry& r) {
  std::map<std::string, double> out;
  for (const auto& family : r.Collect())
    if (family.name == "ferry_rendezvous_rdma_path_total")
      for (const auto& m : family.metric) {
        std::string path, reason;
        for (const auto& l : m.label)
          (l.name == "path" ? path : reason) = l.value;
        out[path + "/" + reason] = m.counter.value;
      }
  return out;
}

std::string key(transfer_path p, path_reason r) {
  return std::string{to_string(p)} + "/" + to_string(r);
}

} // namespace

TEST(PathMetrics, EveryPairKeepsItsOwnCountAndAppearsWhenFirstCounted) {
  prometheus::Registry registry;
  path_metrics paths{registry};
  EXPECT_TRUE(scraped(registry).empty()); // nothing counted, nothing shown
  // Pair k is counted k + 1 times: two pairs sharing a counter would add up.
  std::vector<std::pair<transfer_path, path_reason>> pairs;
  for (size_t p = 0; p < transfer_path_count; ++p)
    for (size_t r = 0; r < path_reason_count; ++r)
      pairs.emplace_back(static_cast<transfer_path>(p), static_cast<path_reason>(r));
  ASSERT_EQ(pairs.size(), 22u);
  for (size_t k = 0; k < pairs.size(); ++k)
    for (size_t n = 0; n <= k; ++n)
      paths.count(pairs[k].first, pairs[k].second);
  auto shown = scraped(registry);
  ASSERT_EQ(shown.size(), pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    auto [path, reason] = pairs[k];
    EXPECT_EQ(shown[key(path, reason)], static_cast<double>(k + 1)) << key(path, reason);
    EXPECT_EQ(paths.value(path, reason), static_cast<double>(k + 1)) << key(path, reason);
  }
}

TEST(PathMetrics, CountsFromThreadsRacingTheFirstLookupAllLand) {
  prometheus::Registry registry;
  path_metrics paths{registry};
  constexpr int threads = 4, each = 5000;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> counting;
  for (int t = 0; t < threads; ++t)
    counting.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) // all start at once: the first counts race
        std::this_thread::yield();
      for (int i = 0; i < each; ++i)
        paths.count(transfer_path::chunked,
                    t % 2 == 0 ? path_reason::below_min : path_reason::no_offer);
    });
  while (ready.load() < threads)
    std::this_thread::yield();
  go.store(true);
  for (auto& t : counting)
    t.join();
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::below_min), 2.0 * each);
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::no_offer), 2.0 * each);
  EXPECT_EQ(scraped(registry).size(), 2u);
}
