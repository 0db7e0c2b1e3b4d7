// ucx_get_raw_sm / ucx_get_raw_tcp: the limit of the RDMA path — a bare
// ucp_get_nbx of a peer process's registered region into a warm buffer,
// completion polled in a busy loop (ferry's GET workers will sleep between
// progress calls; a baseline does not). The peer busy-polls too.
//   sm:  UCX_TLS=sm,self; the region UCX-allocated when shared memory can
//        hand over its pages (one-sided memcpy), as ferry's arenas will be
//   tcp: UCX_TLS=tcp on lo; plain pages (the GET is emulated by the peer)
// UCX reads its environment in ucp_init, so the variables are set in this
// process while no other thread runs (these rows come before any actor
// system in the table) and restored afterwards.
#include <optional>

#include "bench/scenarios.hpp"

#ifdef FERRY_BENCH_WITH_UCX
#include <chrono>
#include <cstring>

#include "bench/bench_buffer.hpp"
#include "bench/hex_text.hpp"
#include "bench/payload.hpp"
#include "bench/peer_process.hpp"
#include "bench/transport_env.hpp"
#include "bench/ucx_peer_link.hpp"
#include "rdma/ucx_get.hpp"
#endif

namespace ferry::bench {

#ifdef FERRY_BENCH_WITH_UCX

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

class ucx_raw_runner : public scenario_runner {
public:
  ucx_raw_runner(const bench_options& opts, bool sm)
    : sm_(sm), region_bytes_(0) {
    for (auto s : opts.sizes)
      region_bytes_ = std::max<uint64_t>(region_bytes_, s);
  }

  std::string start() override {
    std::string tls = sm_ ? "sm,self" : "tcp";
    env_tls_.emplace("UCX_TLS", tls);
    if (!sm_)
      env_dev_.emplace("UCX_NET_DEVICES", "lo");
    std::vector<std::string> env{"UCX_TLS=" + tls};
    if (!sm_)
      env.push_back("UCX_NET_DEVICES=lo");
    std::vector<std::string> args{"--role", "ucx", "--region-bytes",
                                  std::to_string(region_bytes_)};
    if (sm_)
      args.push_back("--ucx-allocate");
    if (auto err = peer_.spawn(args, env); !err.empty())
      return err;
    std::string err;
    auto words = peer_.await_ready(5, 60s, &err);
    if (!err.empty())
      return "ucx peer: " + err;
    std::vector<uint8_t> address, rkey;
    if (!from_hex(words[0], &address) || !from_hex(words[3], &rkey))
      return "ucx peer sent unreadable hex";
    remote_addr_ = std::stoull(words[1]);
    if (std::stoull(words[2]) < region_bytes_)
      return "ucx peer offered a short region";
    if (auto e = link_.open(address, false); !e.empty())
      return e;
    auto key = link_.endpoint->unpack_rkey(rkey);
    if (!key)
      return key.error_message();
    key_.emplace(std::move(*key));
    dst_ = bench_buffer{region_bytes_};
    // Wire-up of a fresh endpoint finishes in the background; until it does
    // the first GETs take milliseconds. Small GETs until they are quick.
    for (int i = 0, quick = 0; i < 2000 && quick < 20; ++i) {
      auto t0 = clock_type::now();
      auto out = get_once(64);
      if (!out.error.empty())
        return "wire-up: " + out.error;
      quick = clock_type::now() - t0 < 1ms ? quick + 1 : 0;
    }
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    std::memset(dst_.data(), 0, bytes);
    auto out = get_once(bytes);
    if (!out.error.empty())
      return out;
    if (auto err = check_payload(dst_.data(), bytes, bytes); !err.empty())
      return run_outcome::failed(err);
    return out;
  }

  // One timed GET of [0, bytes) of the region into dst_.
  run_outcome get_once(uint64_t bytes) {
    auto t0 = clock_type::now();
    auto posted = post_get(*link_.worker, *link_.endpoint, *key_, remote_addr_, dst_.data(), bytes);
    if (!posted)
      return run_outcome::failed(posted.error_message());
    auto deadline = t0 + 60s;
    for (unsigned spins = 1;; ++spins) {
      auto r = posted->test();
      if (r.state == ucx_get_state::done)
        break;
      if (r.state != ucx_get_state::in_progress)
        return run_outcome::failed(r.error);
      link_.worker->progress();
      if ((spins & 1023) == 0 && clock_type::now() > deadline)
        return run_outcome::failed("ucp_get_nbx did not complete within 60 s");
    }
    return run_outcome::took(std::chrono::duration<double>(clock_type::now() - t0).count());
  }

  void stop() override {
    // The key, then the link (its endpoint flushes through the live peer),
    // then the peer, then the environment.
    key_.reset();
    link_.close();
    peer_.stop();
    dst_ = bench_buffer{};
    env_dev_.reset();
    env_tls_.reset();
  }

private:
  bool sm_;
  uint64_t region_bytes_;
  uint64_t remote_addr_ = 0;
  std::optional<scoped_env> env_tls_;
  std::optional<scoped_env> env_dev_;
  peer_process peer_;
  ucx_peer_link link_;
  std::optional<ucx_remote_key> key_;
  bench_buffer dst_;
};

} // namespace

bool ucx_built() {
  return true;
}

std::unique_ptr<scenario_runner> make_ucx_raw_runner(const bench_options& opts,
                                                     bool shared_memory) {
  return std::make_unique<ucx_raw_runner>(opts, shared_memory);
}

#else

bool ucx_built() {
  return false;
}

std::unique_ptr<scenario_runner> make_ucx_raw_runner(const bench_options&, bool) {
  return nullptr;
}

#endif

} // namespace ferry::bench
