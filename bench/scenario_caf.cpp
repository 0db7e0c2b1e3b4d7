// caf_inline and caf_request_rtt: the CAF baseline between two actor
// systems in two processes, configured like ferry nodes.
//   caf_inline:      the whole payload as one reply message (what ferry's
//                    chunked path replaces); the received vector is the
//                    one CAF's deserializer allocates, as an actor gets it
//   caf_request_rtt: an 8-byte request and its 8-byte reply
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
    cfg_ = std::make_unique<caf::actor_system_config>();
    configure_caf(*cfg_);
    sys_ = std::make_unique<caf::actor_system>(*cfg_);
    auto port = static_cast<uint16_t>(std::stoul(words[0]));
    auto remote = sys_->middleman().remote_actor("127.0.0.1", port);
    if (!remote)
      return "cannot reach the caf peer: " + sys_->render(remote.error());
    server_ = *remote;
    self_ = std::make_unique<caf::scoped_actor>(*sys_);
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

} // namespace

std::unique_ptr<scenario_runner> make_caf_inline_runner(const bench_options&) {
  return std::make_unique<caf_inline_runner>();
}

std::unique_ptr<scenario_runner> make_caf_rtt_runner(const bench_options&) {
  return std::make_unique<caf_rtt_runner>();
}

} // namespace ferry::bench
