// http_endpoint: a node's HTTP port (--metrics-port), on civetweb (what
// prometheus-cpp's own exposer runs on).
// Owns: the server and its three paths: /metrics (the registry in
// Prometheus text, after the node's refresh brought sampled series up), /healthz (200 while the process serves) and /readyz
// (200 once the node is ready, else 503 with the reason).
// Must never: block a request on the actor system (readiness is a callback
// over atomics; the registry collects under its own locks).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace prometheus {
class Registry;
} // namespace prometheus

class CivetServer;

namespace ferry {

class http_endpoint {
public:
  /// An empty string: ready; otherwise why not.
  using readiness = std::function<std::string()>;
  /// Runs before each scrape (series synced from counters elsewhere).
  using refresh = std::function<void()>;

  /// Listens on host:port (0: any free port); throws std::runtime_error
  /// when it cannot.
  http_endpoint(const std::string& host, uint16_t port,
                std::shared_ptr<prometheus::Registry> registry, readiness ready,
                refresh before_scrape = {});
  ~http_endpoint();

  http_endpoint(const http_endpoint&) = delete;
  http_endpoint& operator=(const http_endpoint&) = delete;

  uint16_t port() const { return port_; }

private:
  struct handlers;
  std::string host_; // the numeric address this host reaches it at (empty: none)

  std::unique_ptr<handlers> handlers_;
  std::unique_ptr<CivetServer> server_;
  uint16_t port_ = 0;
};

} // namespace ferry
