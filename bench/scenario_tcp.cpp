// tcp_loopback: the limit of the chunked path — a plain TCP stream between
// two processes on 127.0.0.1. A run sends an 8-byte request and receives the
// payload into a warm buffer; the clock covers request to last byte.
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "bench/bench_buffer.hpp"
#include "bench/payload.hpp"
#include "bench/peer_process.hpp"
#include "bench/scenarios.hpp"
#include "bench/tcp_stream.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr uint64_t prepare_flag = 1ULL << 63;

class tcp_runner : public scenario_runner {
public:
  std::string start() override {
    if (auto err = peer_.spawn({"--role", "tcp"}); !err.empty())
      return err;
    std::string err;
    auto words = peer_.await_ready(1, 30s, &err);
    if (!err.empty())
      return "tcp peer: " + err;
    fd_ = tcp_connect_loopback(static_cast<uint16_t>(std::stoul(words[0])), &err);
    return fd_ < 0 ? err : std::string{};
  }

  std::string prepare(uint64_t bytes) override {
    dst_ = bench_buffer{bytes};
    uint64_t req = bytes | prepare_flag;
    uint64_t ack = 0;
    if (!tcp_send_all(fd_, &req, sizeof(req)) || !tcp_recv_all(fd_, &ack, sizeof(ack))
        || ack != bytes)
      return "the tcp peer did not prepare " + format_size(bytes);
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    std::memset(dst_.data(), 0, bytes);
    uint64_t req = bytes;
    auto t0 = clock_type::now();
    if (!tcp_send_all(fd_, &req, sizeof(req)) || !tcp_recv_all(fd_, dst_.data(), bytes))
      return run_outcome::failed("tcp stream broke");
    auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (auto err = check_payload(dst_.data(), bytes, bytes); !err.empty())
      return run_outcome::failed(err);
    return run_outcome::took(secs);
  }

  void finish(uint64_t) override {
    dst_ = bench_buffer{};
  }

  void stop() override {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    peer_.stop();
  }

private:
  peer_process peer_;
  int fd_ = -1;
  bench_buffer dst_;
};

} // namespace

std::unique_ptr<scenario_runner> make_tcp_runner(const bench_options&) {
  return std::make_unique<tcp_runner>();
}

} // namespace ferry::bench
