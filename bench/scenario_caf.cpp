// caf_inline and caf_request_rtt: the CAF baseline between two actor
// systems in two processes, configured like ferry nodes; caf_local_rtt: the
// same round trip inside one such system.
//   caf_inline:      the whole payload as one reply message (what ferry's
//                    chunked path replaces); the received vector is the
//                    one CAF's deserializer allocates, as an actor gets it
//   caf_request_rtt: an 8-byte request and its 8-byte reply
//   caf_local_rtt:   the same request to an actor of this process's system:
//                    one hop to a CAF worker and one back, as the blocking
//                    client makes to its node
#include <chrono>
#include <memory>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "bench/caf_setup.hpp"
#include "bench/payload.hpp"
#include "bench/peer_process.hpp"
#include "bench/scenarios.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto request_limit = std::chrono::seconds{120};

class caf_runner : public scenario_runner {
public:
  std::string start() override {
    if (auto err = peer_.spawn({"--role", "caf"}); !err.empty())
      return err;
    std::string err;
    auto words = peer_.await_ready(1, 30s, &err);
    if (!err.empty())
      return "caf peer: " + err;
    start_system();
    auto port = static_cast<uint16_t>(std::stoul(words[0]));
    auto remote = sys_->middleman().remote_actor("127.0.0.1", port);
    if (!remote)
      return "cannot reach the caf peer: " + sys_->render(remote.error());
    server_ = *remote;
    return {};
  }

  void stop() override {
    self_.reset();
    server_ = nullptr;
    sys_.reset();
    cfg_.reset();
    peer_.stop();
  }

protected:
  /// This process's actor system, set up like a node's, and the scoped
  /// actor the runs ask from.
  void start_system() {
    cfg_ = std::make_unique<caf::actor_system_config>();
    configure_caf(*cfg_);
    sys_ = std::make_unique<caf::actor_system>(*cfg_);
    self_ = std::make_unique<caf::scoped_actor>(*sys_);
  }
  caf::actor_system& system() { return *sys_; }
  caf::scoped_actor& self() { return *self_; }
  std::string render(const caf::error& err) { return sys_->render(err); }
  caf::actor server_;

private:
  peer_process peer_;
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::unique_ptr<caf::scoped_actor> self_;
};

class caf_inline_runner : public caf_runner {
public:
  std::string prepare(uint64_t bytes) override {
    std::string err;
    self()
      ->request(server_, request_limit, bench_prepare_atom::value, bytes)
      .receive(
        [&](uint64_t sum) {
          if (sum != expected_checksum(bytes))
            err = "the caf peer built a different payload";
        },
        [&](caf::error& e) { err = render(e); });
    return err;
  }

  run_outcome run(uint64_t bytes) override {
    run_outcome out;
    auto t0 = clock_type::now();
    self()
      ->request(server_, request_limit, bench_fetch_atom::value, bytes)
      .receive(
        [&](std::vector<char>& payload) {
          auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
          if (auto err = check_payload(payload.data(), payload.size(), bytes);
              !err.empty())
            out = run_outcome::failed(err);
          else
            out = run_outcome::took(secs);
        },
        [&](caf::error& e) { out = run_outcome::failed(render(e)); });
    return out;
  }
};

class caf_rtt_runner : public caf_runner {
public:
  run_outcome run(uint64_t) override {
    run_outcome out;
    auto token = ++counter_;
    auto t0 = clock_type::now();
    self()
      ->request(server_, request_limit, bench_ping_atom::value, token)
      .receive(
        [&](uint64_t echoed) {
          auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
          out = echoed == token ? run_outcome::took(secs)
                                : run_outcome::failed("wrong echo");
        },
        [&](caf::error& e) { out = run_outcome::failed(render(e)); });
    return out;
  }

private:
  uint64_t counter_ = 0;
};

/// Answers a ping with its token, as the caf peer does.
caf::behavior local_echo() {
  return {[](bench_ping_atom, uint64_t x) { return x; }};
}

/// caf_request_rtt's run against an actor of this process's system.
class caf_local_rtt_runner : public caf_rtt_runner {
public:
  std::string start() override {
    start_system();
    server_ = system().spawn(local_echo);
    return {};
  }

  void stop() override {
    if (server_)
      caf::anon_send_exit(server_, caf::exit_reason::user_shutdown);
    caf_rtt_runner::stop();
  }
};

} // namespace

std::unique_ptr<scenario_runner> make_caf_inline_runner(const bench_options&) {
  return std::make_unique<caf_inline_runner>();
}

std::unique_ptr<scenario_runner> make_caf_rtt_runner(const bench_options&) {
  return std::make_unique<caf_rtt_runner>();
}

std::unique_ptr<scenario_runner> make_caf_local_rtt_runner(const bench_options&) {
  return std::make_unique<caf_local_rtt_runner>();
}

} // namespace ferry::bench
