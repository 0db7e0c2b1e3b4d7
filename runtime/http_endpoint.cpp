#include "runtime/http_endpoint.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <CivetServer.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "actors/cluster/tcp_probe.hpp"

namespace ferry {

namespace {

void reply(mg_connection* conn, int status, const char* reason, const char* type,
           const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            status, reason, type, body.size());
  mg_write(conn, body.data(), body.size());
}

class metrics_handler : public CivetHandler {
public:
  metrics_handler(std::shared_ptr<prometheus::Registry> r, http_endpoint::refresh before)
    : registry_(std::move(r)), before_(std::move(before)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    if (before_)
      before_();
    std::ostringstream out;
    prometheus::TextSerializer{}.Serialize(out, registry_->Collect());
    reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", out.str());
    return true;
  }

private:
  std::shared_ptr<prometheus::Registry> registry_;
  http_endpoint::refresh before_;
};

class health_handler : public CivetHandler {
public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    reply(conn, 200, "OK", "text/plain", "ok\n");
    return true;
  }
};

class ready_handler : public CivetHandler {
public:
  explicit ready_handler(http_endpoint::readiness r) : ready_(std::move(r)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    auto why = ready_ ? ready_() : std::string{};
    if (why.empty())
      reply(conn, 200, "OK", "text/plain", "ready\n");
    else
      reply(conn, 503, "Service Unavailable", "text/plain", "not ready: " + why + "\n");
    return true;
  }

private:
  http_endpoint::readiness ready_;
};

/// The numeric address a client on this host reaches a server listening on
/// `host` at (a wildcard: loopback), resolved once, IPv4 first as civetweb
/// does; empty when it does not resolve.
std::string local_address_of(std::string host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0")
    return "127.0.0.1";
  if (host == "::")
    return "::1";
  for (int family : {AF_INET, AF_UNSPEC}) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found)
      continue;
    char text[NI_MAXHOST];
    int rc = ::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0,
                           NI_NUMERICHOST);
    ::freeaddrinfo(found);
    if (rc == 0)
      return text;
  }
  return {};
}

} // namespace

struct http_endpoint::handlers {
  metrics_handler metrics;
  health_handler health;
  ready_handler ready;
};

http_endpoint::http_endpoint(const std::string& host, uint16_t port,
                             std::shared_ptr<prometheus::Registry> registry,
                             readiness ready, refresh before_scrape)
  : handlers_(new handlers{metrics_handler{std::move(registry), std::move(before_scrape)},
                           health_handler{},
                           ready_handler{std::move(ready)}}) {
  std::vector<std::string> options{"listening_ports", host + ":" + std::to_string(port),
                                   "num_threads", "2"};
  try {
    server_ = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    throw std::runtime_error(e.what());
  }
  server_->addHandler("/metrics", handlers_->metrics);
  server_->addHandler("/healthz", handlers_->health);
  server_->addHandler("/readyz", handlers_->ready);
  auto ports = server_->getListeningPorts();
  port_ = ports.empty() ? 0 : static_cast<uint16_t>(ports.front());
  host_ = local_address_of(host);
}

http_endpoint::~http_endpoint() {
  if (!server_)
    return;
  // civetweb's listener looks at its stop flag only between polls of the
  // listening socket, 2 s each (SOCKET_TIMEOUT_QUANTUM in Debian's 1.15),
  // so a close waited a second on average. A connection wakes the poll: one
  // every few milliseconds until the close returns (one that arrives before
  // the flag is up is served an immediate end of stream).
  // (No address to reach it at, or no thread to spare: the plain close.)
  std::mutex m;
  std::condition_variable cv;
  bool closed = false;
  std::thread waker;
  if (!host_.empty() && port_ != 0) {
    try {
      waker = std::thread{[&] {
        std::unique_lock lock{m};
        while (!cv.wait_for(lock, std::chrono::milliseconds{5}, [&] { return closed; })) {
          lock.unlock();
          (void)probe_tcp(host_, port_, std::chrono::milliseconds{100});
          lock.lock();
        }
      }};
    } catch (const std::system_error&) {
    }
  }
  server_->close(); // no handler runs after this
  {
    std::lock_guard lock{m};
    closed = true;
  }
  cv.notify_one();
  if (waker.joinable())
    waker.join();
}

} // namespace ferry
