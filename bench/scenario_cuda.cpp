// cuda_direct_{d2h,h2d}, cuda_staged_{d2h,h2d}_<chunk>: local GPU copies on
// device 0 through the real driver (rows are skipped without one).
//   direct: one async copy of the whole payload between device memory and
//           host memory registered for it, waited on (the limit: an H200
//           does 53-55 GB/s pinned);
//   staged: the same bytes between device memory and plain host memory
//           through one pinned staging chunk of the row's size (the
//           local_stager: halves in turn, a memcpy per piece).
// Every run's bytes are checked after the clock stops: to host, the host
// buffer; to the device, read back with a direct copy.
#include <chrono>
#include <cstring>
#include <optional>

#include "bench/bench_buffer.hpp"
#include "bench/payload.hpp"
#include "bench/scenarios.hpp"
#include "protocol/errors.hpp"
#include "staging/cuda_driver.hpp"
#include "staging/direct_copy.hpp"
#include "staging/local_stager.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace ferry::staging;

class cuda_runner : public scenario_runner {
public:
  cuda_runner(copy_direction dir, uint64_t chunk, std::shared_ptr<cuda_api> api)
    : dir_(dir), chunk_(chunk), api_(std::move(api)) {}

  std::string start() override {
    if (!api_)
      api_ = std::shared_ptr<cuda_api>{load_cuda_driver()};
    if (auto why = api_->unavailable_reason(); !why.empty())
      return why;
    auto ctx = api_->retain_context(0);
    if (!ctx)
      return describe(ctx.error());
    ctx_ = *ctx;
    if (chunk_ > 0) {
      staging_config cfg;
      cfg.chunk_size = chunk_;
      cfg.chunk_count = 2;
      if (auto why = cfg.check(); !why.empty())
        return why;
      stager_.emplace(api_, cfg);
    }
    return {};
  }

  std::string prepare(uint64_t bytes) override {
    auto d = device_buffer::allocate(*api_, ctx_, bytes);
    if (!d)
      return describe(d.error());
    device_ = std::move(*d);
    host_ = bench_buffer{bytes};
    check_ = bench_buffer{bytes};
    auto reg = registered_host::make(*api_, ctx_, check_.data(), bytes);
    if (!reg)
      return describe(reg.error());
    check_reg_ = std::move(*reg);
    if (chunk_ == 0) { // the direct row copies from and into registered memory
      auto hr = registered_host::make(*api_, ctx_, host_.data(), bytes);
      if (!hr)
        return describe(hr.error());
      host_reg_ = std::move(*hr);
    }
    if (dir_ == copy_direction::to_host) { // the device holds the payload
      fill_payload(check_.data(), bytes);
      if (auto err = direct_copy(*api_, ctx_, copy_direction::to_device, device_.get(),
                                 check_.data(), bytes))
        return describe(err);
    } else {
      fill_payload(host_.data(), bytes);
    }
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    if (dir_ == copy_direction::to_host)
      std::memset(host_.data(), 0, bytes);
    auto t0 = clock_type::now();
    caf::error err;
    if (chunk_ == 0) {
      err = direct_copy(*api_, ctx_, dir_, device_.get(), host_.data(), bytes);
    } else {
      copy_job j;
      j.direction = dir_;
      j.device = device_.get();
      j.host = host_.data();
      j.bytes = bytes;
      err = stager_->copy(0, j).error;
    }
    auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (err)
      return run_outcome::failed(describe(err));
    const char* seen = host_.data();
    if (dir_ == copy_direction::to_device) {
      std::memset(check_.data(), 0, bytes);
      if (auto back = direct_copy(*api_, ctx_, copy_direction::to_host, device_.get(),
                                  check_.data(), bytes))
        return run_outcome::failed("reading the device back: " + describe(back));
      seen = check_.data();
    }
    if (auto bad = check_payload(seen, bytes, bytes); !bad.empty())
      return run_outcome::failed(bad);
    return run_outcome::took(secs);
  }

  void finish(uint64_t) override {
    host_reg_.reset();
    check_reg_.reset();
    device_.reset();
    host_ = bench_buffer{};
    check_ = bench_buffer{};
  }

  void stop() override {
    stager_.reset();
    if (ctx_ != 0)
      api_->release_context(0);
    ctx_ = 0;
  }

private:
  copy_direction dir_;
  uint64_t chunk_; // 0: the direct row
  std::shared_ptr<cuda_api> api_;
  cuda_context ctx_ = 0;
  std::optional<local_stager> stager_;
  device_buffer device_;
  bench_buffer host_, check_;
  registered_host host_reg_, check_reg_;
};

} // namespace

std::string cuda_unavailable_reason() {
  return load_cuda_driver()->unavailable_reason();
}

std::unique_ptr<scenario_runner> make_cuda_runner(const bench_options&, bool to_host,
                                                  uint64_t chunk_bytes,
                                                  std::shared_ptr<staging::cuda_api> api) {
  return std::make_unique<cuda_runner>(
    to_host ? copy_direction::to_host : copy_direction::to_device, chunk_bytes,
    std::move(api));
}

} // namespace ferry::bench
