#include "bench/consumer_seat.hpp"

#include <chrono>
#include <cstdlib>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "bench/owner_peer.hpp"
#include "protocol/errors.hpp"

namespace ferry::bench {

namespace {

std::string ucx_tls_now() {
  auto* tls = std::getenv("UCX_TLS");
  return tls ? tls : "unset";
}

} // namespace

consumer_seat::consumer_seat(const ferry_knobs& knobs,
                             const std::string& owner_endpoint, bool rdma) {
  node_ = std::make_unique<node>(consumer_node_config(knobs, rdma));
  if (rdma && !node_->has_ucx()) {
    error_ = "the consumer node has no UCX transport (UCX_TLS=" + ucx_tls_now() + ")";
    return;
  }
  if (auto err = node_->start()) {
    error_ = describe(err);
    return;
  }
  auto hello = node_->connect(owner_endpoint);
  if (!hello) {
    error_ = describe(hello.error());
    return;
  }
  if (rdma && hello->ucx_address.empty()) {
    error_ = "the owner registered no UCX address in its hello";
    return;
  }
  owner_gateway_ = caf::actor_cast<gateway_actor>(hello->gateway);
  client_ = std::make_unique<blocking_client>(*node_);
}

consumer_seat::~consumer_seat() {
  client_.reset();
  if (node_)
    node_->stop();
}

std::string consumer_seat::hold(const data_handle& h, uint64_t lease) {
  std::string err;
  if (holding_)
    if (auto e = client_->detach(held_, lease_))
      err = "detach: " + describe(e);
  held_ = h;
  lease_ = lease;
  holding_ = true;
  return err;
}

std::string consumer_seat::end(bool release) {
  if (!holding_)
    return {};
  holding_ = false;
  if (release) {
    auto r = client_->release(held_, lease_);
    return r ? std::string{} : "release: " + describe(r.error());
  }
  auto e = client_->detach(held_, lease_);
  return e ? "detach: " + describe(e) : std::string{};
}

std::string reseat(std::unique_ptr<consumer_seat>& seat, const ferry_knobs& knobs,
                   const std::string& owner_endpoint, bool rdma) {
  if (seat) {
    auto err = seat->end(false);
    seat.reset();
    if (!err.empty())
      return err;
  }
  seat = std::make_unique<consumer_seat>(knobs, owner_endpoint, rdma);
  auto err = seat->error();
  if (!err.empty())
    seat.reset();
  return err;
}

std::string await_eager_wireup(node& n) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  std::string last = "no answer";
  while (std::chrono::steady_clock::now() < until) {
    caf::scoped_actor self{n.system()};
    nlohmann::json eps;
    self->request(n.ucx_engine().actor(), std::chrono::seconds{1}, stat_atom::value)
      .receive([&](std::string& s) { eps = nlohmann::json::parse(s)["endpoints"]; },
               [&](caf::error& err) { last = describe(err); });
    n.ucx_engine().wake();
    if (eps.is_object()) {
      if (eps["eager_wireups"].get<uint64_t>() >= 1 && eps["wireups_pending"] == 0u)
        return {};
      last = eps.dump();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
  return "the eager wireup did not finish within 5 s: " + last;
}

} // namespace ferry::bench
