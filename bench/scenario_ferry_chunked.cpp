// ferry_chunked, ferry_chunked_cold, ferry_chunked_into: a ferry get over
// the chunked path from an owner node in another process.
//   warm: blocking_client::get on a connected pair; the consumer allocates
//         the result, as every caller of get pays
//   cold: the first get on a consumer node started and connected just
//         before (set-up untimed, the get timed)
//   into: blocking_client::get_into a warm caller buffer: the path without
//         the allocation of the result
// Both nodes run without the UCX transport, so every get takes the chunked
// path whatever the payload (the RDMA rows are separate).
#include <chrono>
#include <cstring>
#include <memory>

#include "bench/bench_buffer.hpp"
#include "bench/consumer_seat.hpp"
#include "bench/owner_peer.hpp"
#include "bench/payload.hpp"
#include "bench/scenarios.hpp"
#include "protocol/errors.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

class ferry_chunked_runner : public scenario_runner {
public:
  ferry_chunked_runner(const bench_options& opts, chunked_mode mode)
    : knobs_(opts.knobs), mode_(mode) {}

  std::string start() override {
    if (auto err = owner_.start(knobs_); !err.empty())
      return err;
    if (mode_ != chunked_mode::cold)
      return reseat(seat_, knobs_, owner_.endpoint(), false);
    return {};
  }

  std::string prepare(uint64_t bytes) override {
    std::string err;
    handle_ = owner_.stage(bytes, &err);
    if (mode_ == chunked_mode::into)
      dst_ = bench_buffer{bytes};
    return err;
  }

  run_outcome run(uint64_t bytes) override {
    if (mode_ == chunked_mode::cold)
      if (auto err = reseat(seat_, knobs_, owner_.endpoint(), false); !err.empty())
        return run_outcome::failed(err);
    auto& c = seat_->client();
    if (mode_ == chunked_mode::into) {
      std::memset(dst_.data(), 0, bytes);
      auto t0 = clock_type::now();
      auto got = c.get_into(handle_, dst_.data(), bytes);
      auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
      if (!got)
        return run_outcome::failed(describe(got.error()));
      if (auto err = check_payload(dst_.data(), got->first, bytes); !err.empty())
        return run_outcome::failed(err);
      return finish_run(secs, got->second);
    }
    auto t0 = clock_type::now();
    auto got = c.get(handle_);
    auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (!got)
      return run_outcome::failed(describe(got.error()));
    if (auto err = check_payload(got->bytes.data(), got->bytes.size(), bytes);
        !err.empty())
      return run_outcome::failed(err);
    return finish_run(secs, got->lease_id);
  }

  void finish(uint64_t) override {
    if (seat_)
      (void) seat_->end(true);
    if (mode_ == chunked_mode::cold)
      seat_.reset();
    dst_ = bench_buffer{};
  }

  void stop() override {
    seat_.reset();
    owner_.stop();
  }

private:
  run_outcome finish_run(double secs, uint64_t lease) {
    if (auto err = seat_->hold(handle_, lease); !err.empty())
      return run_outcome::failed(err);
    return run_outcome::took(secs);
  }

  ferry_knobs knobs_;
  chunked_mode mode_;
  owner_peer owner_;
  std::unique_ptr<consumer_seat> seat_;
  data_handle handle_;
  bench_buffer dst_;
};

} // namespace

std::unique_ptr<scenario_runner> make_ferry_chunked_runner(const bench_options& opts,
                                                           chunked_mode mode) {
  return std::make_unique<ferry_chunked_runner>(opts, mode);
}

} // namespace ferry::bench
