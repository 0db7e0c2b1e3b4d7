// thread_wake_rtt, thread_spin_rtt: what it costs to hand
// work from one thread to another and back on this machine, the floor under
// every hop between threads that a get makes (caller, consumer, UCX engine,
// owner and back).
//   thread_wake_rtt: a token to a partner thread that sleeps on a condition
//     variable, and back: two wake-ups of a sleeping thread.
//   thread_spin_rtt: the same through one atomic word, both threads
//     busy-polling: what a hand-off costs when nobody sleeps (each thread
//     then holds a core).
// (caf_local_rtt, the same through a CAF worker, is in scenario_caf.cpp.)
// Each run is one round trip; the token's value comes back incremented.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench/scenarios.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

run_outcome checked(double secs, uint64_t sent, uint64_t back) {
  if (back != sent + 1)
    return run_outcome::failed("the partner answered " + std::to_string(back)
                               + " to " + std::to_string(sent));
  return run_outcome::took(secs);
}

/// A partner thread asleep on a condition variable until a token comes.
class thread_wake_runner : public scenario_runner {
public:
  std::string start() override {
    partner_ = std::thread([this] {
      std::unique_lock<std::mutex> guard{mtx_};
      for (;;) {
        cv_.wait(guard, [this] { return has_token_ || stopping_; });
        if (stopping_)
          return;
        ++token_;
        has_token_ = false;
        cv_.notify_all();
      }
    });
    return {};
  }

  run_outcome run(uint64_t) override {
    std::unique_lock<std::mutex> guard{mtx_};
    auto sent = ++sequence_;
    auto t0 = clock_type::now();
    token_ = sent;
    has_token_ = true;
    cv_.notify_all();
    if (!cv_.wait_for(guard, std::chrono::seconds{10}, [this] { return !has_token_; }))
      return run_outcome::failed("the sleeping partner did not answer within 10 s");
    auto secs = seconds_since(t0);
    return checked(secs, sent, token_);
  }

  void stop() override {
    if (!partner_.joinable())
      return;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopping_ = true;
    }
    cv_.notify_all();
    partner_.join();
  }

  ~thread_wake_runner() override { stop(); }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  uint64_t token_ = 0;
  uint64_t sequence_ = 0;
  bool has_token_ = false;
  bool stopping_ = false;
  std::thread partner_;
};

/// A partner thread polling one atomic word: odd values are requests, the
/// partner answers with the next (even) value.
class thread_spin_runner : public scenario_runner {
public:
  std::string start() override {
    partner_ = std::thread([this] {
      while (!stopping_.load(std::memory_order_acquire)) {
        auto v = word_.load(std::memory_order_acquire);
        if (v % 2 == 1)
          word_.store(v + 1, std::memory_order_release);
      }
    });
    return {};
  }

  run_outcome run(uint64_t) override {
    auto sent = word_.load(std::memory_order_acquire) + 1; // odd: a request
    auto t0 = clock_type::now();
    word_.store(sent, std::memory_order_release);
    uint64_t back = sent;
    // Bounded: a partner that never answers fails the run after 10 s.
    while ((back = word_.load(std::memory_order_acquire)) == sent) {
      if (seconds_since(t0) > 10.0)
        return run_outcome::failed("the spinning partner did not answer within 10 s");
    }
    auto secs = seconds_since(t0);
    return checked(secs, sent, back);
  }

  void stop() override {
    if (!partner_.joinable())
      return;
    stopping_.store(true, std::memory_order_release);
    partner_.join();
  }

  ~thread_spin_runner() override { stop(); }

private:
  std::atomic<uint64_t> word_{0};
  std::atomic<bool> stopping_{false};
  std::thread partner_;
};

} // namespace

std::unique_ptr<scenario_runner> make_thread_wake_runner(const bench_options&) {
  return std::make_unique<thread_wake_runner>();
}

std::unique_ptr<scenario_runner> make_thread_spin_runner(const bench_options&) {
  return std::make_unique<thread_spin_runner>();
}

} // namespace ferry::bench
