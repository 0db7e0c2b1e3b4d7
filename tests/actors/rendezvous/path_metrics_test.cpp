// path_metrics: ferry_rendezvous_rdma_path_total{path, reason}, counted by
// both roles from their own threads, each series looked up once.
#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <string>
#include <thread>
#include <vector>

#include "actors/rendezvous/path_metrics.hpp"

using namespace ferry;

namespace {

/// The series of the family as a scrape would show them: "path/reason" = value.
std::vector<std::pair<std::string, double>> scraped(prometheus::Registry& r) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& family : r.Collect())
    if (family.name == "ferry_rendezvous_rdma_path_total")
      for (const auto& m : family.metric) {
        std::string path, reason;
        for (const auto& l : m.label)
          (l.name == "path" ? path : reason) = l.value;
        out.emplace_back(path + "/" + reason, m.counter.value);
      }
  return out;
}

} // namespace

TEST(PathMetrics, ASeriesAppearsWhenFirstCountedAndKeepsItsCount) {
  prometheus::Registry registry;
  path_metrics paths{registry};
  EXPECT_TRUE(scraped(registry).empty()); // nothing counted, nothing shown
  paths.count(transfer_path::chunked, path_reason::below_min);
  paths.count(transfer_path::chunked, path_reason::below_min);
  paths.count(transfer_path::rdma, path_reason::ok);
  auto shown = scraped(registry);
  ASSERT_EQ(shown.size(), 2u);
  for (const auto& [series, value] : shown) {
    if (series == "chunked/below_min") {
      EXPECT_EQ(value, 2.0);
    } else {
      EXPECT_EQ(series, "rdma/ok");
      EXPECT_EQ(value, 1.0);
    }
  }
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::below_min), 2.0);
  EXPECT_EQ(paths.value(transfer_path::rdma, path_reason::ok), 1.0);
}

TEST(PathMetrics, CountsFromManyThreadsAllLand) {
  prometheus::Registry registry;
  path_metrics paths{registry};
  constexpr int threads = 4, each = 5000;
  std::vector<std::thread> counting;
  for (int t = 0; t < threads; ++t)
    counting.emplace_back([&paths, t] {
      for (int i = 0; i < each; ++i)
        paths.count(transfer_path::chunked,
                    t % 2 == 0 ? path_reason::below_min : path_reason::no_offer);
    });
  for (auto& t : counting)
    t.join();
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::below_min), 2.0 * each);
  EXPECT_EQ(paths.value(transfer_path::chunked, path_reason::no_offer), 2.0 * each);
  EXPECT_EQ(scraped(registry).size(), 2u); // one series per pair, however many raced
}
