// ucx_am_rtt_sm / ucx_am_rtt_tcp: UCX's own active-message round trip
// between this process and a `ucx` peer started with --am-echo, on the
// transports the ferry_rdma rows use (bench/transport_env.hpp): a ping of
// the row's size, the peer's pong of the same bytes, both sides
// busy-polling. What a control message over UCX could cost at best: the
// floor the rendezvous control channel is judged against.
#include "bench/scenarios.hpp"

#ifdef FERRY_BENCH_WITH_UCX
#include <chrono>
#include <optional>

#include "bench/hex_text.hpp"
#include "bench/payload.hpp"
#include "bench/peer_process.hpp"
#include "bench/ucx_am_echo.hpp"
#include "bench/ucx_peer_link.hpp"
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
    if (auto e = link_.open(address, true); !e.empty())
      return e;
    if (auto e = listen_am(link_.worker->native(), am_pong_id, &inbox_); !e.empty())
      return e;
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
    // The link (its endpoint flushes through the live peer), then the peer,
    // then the environment.
    link_.close();
    peer_.stop();
    env_.reset();
  }

private:
  // One timed ping of `bytes` (the payload pattern) and its pong.
  run_outcome ping(uint64_t bytes) {
    fill_payload(ping_, bytes);
    inbox_.arrived = false;
    auto t0 = clock_type::now();
    auto send = post_am(link_.endpoint->native(), am_ping_id, ping_, bytes, true);
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
      link_.worker->progress();
      if ((spins & 1023) == 0 && clock_type::now() > deadline)
        return run_outcome::failed("no pong within 10 s; peer: " + peer_.stderr_tail());
    }
    return run_outcome::took(std::chrono::duration<double>(clock_type::now() - t0).count());
  }

  ucx_transport transport_;
  std::optional<scoped_transport_env> env_;
  peer_process peer_;
  ucx_peer_link link_;
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
