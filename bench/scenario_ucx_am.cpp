// ucx_am_rtt_sm / ucx_am_rtt_tcp: UCX's own active-message round trip
// between this process and a `ucx` peer started with --am-echo, on the
// transports the ferry_rdma rows use (bench/transport_env.hpp): a ping of
// the row's size, the peer's pong of the same bytes, both sides
// busy-polling. What a control message over UCX could cost at best: the
// floor the rendezvous control channel is judged against.
#include "bench/scenarios.hpp"

#ifdef FERRY_BENCH_WITH_UCX
#include <chrono>
#include <cstring>
#include <optional>

#include "bench/hex_text.hpp"
#include "bench/payload.hpp"
#include "bench/peer_process.hpp"
#include "bench/ucx_am_echo.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_worker.hpp"
#endif

namespace ferry::bench {

#ifdef FERRY_BENCH_WITH_UCX

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

class ucx_am_rtt_runner : public scenario_runner {
public:
  explicit ucx_am_rtt_runner(ucx_transport t) : transport_(t) {}

  std::string start() override {
    env_.emplace(transport_);
    std::vector<std::string> args{"--role", "ucx", "--region-bytes", "4096", "--am-echo"};
    if (auto err = peer_.spawn(args, ucx_peer_env(transport_)); !err.empty())
      return err;
    std::string err;
    auto words = peer_.await_ready(5, 60s, &err);
    if (!err.empty())
      return "ucx peer: " + err;
    std::vector<uint8_t> address;
    if (!from_hex(words[0], &address))
      return "ucx peer sent an unreadable worker address";
    ucx_context_config config;
    config.active_messages = true;
    auto ctx = ucx_context::create(config);
    if (!ctx)
      return ctx.error_message();
    ctx_.emplace(std::move(*ctx));
    auto worker = ucx_worker::create(*ctx_);
    if (!worker)
      return worker.error_message();
    worker_.emplace(std::move(*worker));
    if (auto e = listen_am(worker_->native(), am_pong_id, &inbox_); !e.empty())
      return e;
    auto ep = ucx_endpoint::connect(*worker_, address.data(), address.size());
    if (!ep)
      return ep.error_message();
    ep_.emplace(std::move(*ep));
    // A fresh endpoint wires up in the background: ping until 20 in a row
    // come back within a millisecond.
    for (int i = 0, quick = 0; i < 2000 && quick < 20; ++i) {
      auto out = ping(8);
      if (!out.error.empty())
        return "wire-up: " + out.error;
      quick = out.seconds < 1e-3 ? quick + 1 : 0;
    }
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    if (bytes > am_max_message)
      return run_outcome::failed("a ping of at most " + std::to_string(am_max_message)
                                 + " bytes");
    auto out = ping(bytes);
    if (!out.error.empty())
      return out;
    if (inbox_.length != bytes)
      return run_outcome::failed("a pong of " + std::to_string(inbox_.length)
                                 + " bytes for a ping of " + std::to_string(bytes));
    if (auto err = check_payload(inbox_.bytes, bytes, bytes); !err.empty())
      return run_outcome::failed("pong: " + err);
    return out;
  }

  void stop() override {
    // Endpoint first (its close flushes through the live peer), then the
    // worker and context, then the peer, then the environment.
    if (ep_)
      ep_->close(1s);
    ep_.reset();
    worker_.reset();
    ctx_.reset();
    peer_.stop();
    env_.reset();
  }

private:
  // One timed ping of `bytes` (the payload pattern) and its pong.
  run_outcome ping(uint64_t bytes) {
    fill_payload(ping_, bytes);
    inbox_.arrived = false;
    auto t0 = clock_type::now();
    auto send = post_am(ep_->native(), am_ping_id, ping_, bytes, true);
    if (!send.error.empty())
      return run_outcome::failed(send.error);
    auto deadline = t0 + 10s;
    for (unsigned spins = 1;; ++spins) {
      bool sent = am_sent(send);
      if (!send.error.empty())
        return run_outcome::failed(send.error);
      if (sent && inbox_.arrived)
        break;
      if (!inbox_.error.empty())
        return run_outcome::failed(inbox_.error);
      worker_->progress();
      if ((spins & 1023) == 0 && clock_type::now() > deadline)
        return run_outcome::failed("no pong within 10 s; peer: " + peer_.stderr_tail());
    }
    return run_outcome::took(std::chrono::duration<double>(clock_type::now() - t0).count());
  }

  ucx_transport transport_;
  std::optional<scoped_transport_env> env_;
  peer_process peer_;
  std::optional<ucx_context> ctx_;
  std::optional<ucx_worker> worker_;
  std::optional<ucx_endpoint> ep_;
  am_inbox inbox_;
  char ping_[am_max_message];
};

} // namespace

std::unique_ptr<scenario_runner> make_ucx_am_rtt_runner(const bench_options&,
                                                        ucx_transport transport) {
  return std::make_unique<ucx_am_rtt_runner>(transport);
}

#else

std::unique_ptr<scenario_runner> make_ucx_am_rtt_runner(const bench_options&,
                                                        ucx_transport) {
  return nullptr;
}

#endif

} // namespace ferry::bench
