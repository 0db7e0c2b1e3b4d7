// http_endpoint: a node's HTTP port serves its three paths while open, and
// its close does not wait out civetweb's listener poll (2 s a turn), which
// every stopping node paid.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "runtime/http_endpoint.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;

namespace {

std::shared_ptr<prometheus::Registry> registry_counting(double n) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
    .Name("ferry_http_test_total")
    .Help("a series to scrape")
    .Register(*registry)
    .Add({})
    .Increment(n);
  return registry;
}

} // namespace

TEST(HttpEndpoint, ServesHealthReadinessAndMetricsUntilClosed) {
  uint16_t port = 0;
  {
    http_endpoint endpoint{"127.0.0.1", 0, registry_counting(3),
                           [] { return std::string{"the joins are not reached"}; }};
    port = endpoint.port();
    ASSERT_NE(port, 0);
    EXPECT_EQ(test::http_get(port, "/healthz").status, 200);
    auto ready = test::http_get(port, "/readyz");
    EXPECT_EQ(ready.status, 503);
    EXPECT_NE(ready.body.find("not ready: the joins are not reached"), std::string::npos)
      << ready.raw;
    auto metrics = test::http_get(port, "/metrics");
    EXPECT_EQ(metrics.status, 200);
    EXPECT_NE(metrics.body.find("ferry_http_test_total 3"), std::string::npos)
      << metrics.body;
  }
  EXPECT_EQ(test::http_get(port, "/healthz").status, 0) << "still served after the close";
}

TEST(HttpEndpoint, FourClosesTakeLessThanOneListenerPoll) {
  // Without the wake-up, each close waits for the listener's poll to end:
  // a second on average, so four took about four seconds. With it, a few
  // milliseconds each; the bound leaves room for a loaded machine.
  auto registry = registry_counting(1);
  std::chrono::steady_clock::duration closing{};
  for (int i = 0; i < 4; ++i) {
    auto endpoint = std::make_unique<http_endpoint>("127.0.0.1", 0, registry,
                                                    [] { return std::string{}; });
    ASSERT_EQ(test::http_get(endpoint->port(), "/readyz").status, 200);
    auto t0 = std::chrono::steady_clock::now();
    endpoint.reset();
    closing += std::chrono::steady_clock::now() - t0;
  }
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(closing).count(), 2000);
}
