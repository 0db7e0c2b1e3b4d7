// memcpy: the limit of any same-host path — two warm buffers, one process.
// A run copies the payload enough times to last ~0.1 ms (small sizes are
// far below the clock's resolution otherwise) and reports the time per copy.
#include <chrono>
#include <cstring>

#include "bench/bench_buffer.hpp"
#include "bench/payload.hpp"
#include "bench/scenarios.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

class memcpy_runner : public scenario_runner {
public:
  std::string prepare(uint64_t bytes) override {
    src_ = bench_buffer{bytes};
    dst_ = bench_buffer{bytes};
    fill_payload(src_.data(), bytes);
    copies_ = bytes >= 4 * MiB ? 1 : static_cast<int>(4 * MiB / bytes / 16 + 1);
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    std::memset(dst_.data(), 0, bytes);
    auto t0 = clock_type::now();
    for (int i = 0; i < copies_; ++i) {
      std::memcpy(dst_.data(), src_.data(), bytes);
      // Keep the compiler from merging the copies.
      asm volatile("" : : "r"(dst_.data()) : "memory");
    }
    auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (auto err = check_payload(dst_.data(), bytes, bytes); !err.empty())
      return run_outcome::failed(err + " after memcpy");
    return run_outcome::took(secs / copies_);
  }

  void finish(uint64_t) override {
    src_ = bench_buffer{};
    dst_ = bench_buffer{};
  }

private:
  bench_buffer src_;
  bench_buffer dst_;
  int copies_ = 1;
};

} // namespace

std::unique_ptr<scenario_runner> make_memcpy_runner(const bench_options&) {
  return std::make_unique<memcpy_runner>();
}

} // namespace ferry::bench
