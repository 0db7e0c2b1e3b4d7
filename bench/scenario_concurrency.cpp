// ferry_chunked_concurrent, ferry_rdma_sm_concurrent: N consumers pulling
// the same handle from one owner at once. Each consumer is a thread with its
// own ferry::node in this process (so N connections to the owner, as N hosts
// would have). A run starts all gets together and ends when the last one
// finishes; every consumer's bytes are verified, and its lease kept, only
// after the clock stops (the cores are shared: checksums of early finishers
// would slow the ones still pulling).
// Throughput is the aggregate: N x size / run time.
// The RDMA row runs both sides on UCX over shared memory (UCX_TLS set in
// this process for the row's life, in the owner's at spawn), stages the
// payload pinned, and checks that every consumer counted one completed
// RDMA GET per run (path_check.hpp): a fallback to chunks fails the point.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bench/consumer_seat.hpp"
#include "bench/owner_peer.hpp"
#include "bench/path_check.hpp"
#include "bench/payload.hpp"
#include "bench/scenarios.hpp"
#include "bench/seated_owner.hpp"
#include "bench/transport_env.hpp"
#include "protocol/errors.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

/// Empty when `got` holds `bytes` bytes of the bench payload.
std::string verify(const caf::expected<get_result>& got, uint64_t bytes) {
  if (!got)
    return describe(got.error());
  return check_payload(got->bytes.data(), got->bytes.size(), bytes);
}

class concurrent_runner : public scenario_runner {
public:
  concurrent_runner(const bench_options& opts, int consumers,
                    std::optional<ucx_transport> rdma)
    : knobs_(opts.knobs), consumers_(consumers), rdma_(rdma) {}

  std::string start() override { return cluster_.start(knobs_, rdma_, consumers_, "consumer"); }

  std::string prepare(uint64_t bytes) override {
    std::string err;
    handle_ = cluster_.owner.stage(bytes, &err, rdma_.has_value());
    return err;
  }

  run_outcome run(uint64_t bytes) override {
    auto n = cluster_.seats.size();
    std::vector<path_counts> before;
    if (rdma_)
      for (auto& seat : cluster_.seats)
        before.push_back(read_paths(seat->host()));
    std::vector<clock_type::time_point> ends(n);
    std::vector<caf::expected<get_result>> got;
    for (size_t i = 0; i < n; ++i)
      got.emplace_back(caf::sec::none);
    std::mutex mtx;
    std::condition_variable cv;
    bool go = false;
    size_t waiting = 0;
    clock_type::time_point t0;
    std::vector<std::thread> threads;
    // Inside the clock: the gets alone. A consumer that finishes early must
    // not spend the shared cores verifying while the others still pull.
    for (size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        {
          std::unique_lock<std::mutex> lock{mtx};
          ++waiting;
          cv.notify_all();
          cv.wait(lock, [&] { return go; });
        }
        got[i] = cluster_.seats[i]->client().get(handle_);
        ends[i] = clock_type::now();
      });
    }
    {
      std::unique_lock<std::mutex> lock{mtx};
      cv.wait(lock, [&] { return waiting == n; });
      t0 = clock_type::now();
      go = true;
    }
    cv.notify_all();
    for (auto& t : threads)
      t.join();
    auto last = *std::max_element(ends.begin(), ends.end());
    // After the clock: every consumer's bytes, its lease (held even where
    // another consumer failed, so none is left to expire), its path.
    std::string first_error;
    for (size_t i = 0; i < n; ++i) {
      std::string err = got[i] ? cluster_.seats[i]->hold(handle_, got[i]->lease_id) : "";
      if (err.empty())
        err = verify(got[i], bytes);
      if (err.empty() && rdma_)
        err = expect_rdma(before[i], read_paths(cluster_.seats[i]->host()));
      if (!err.empty() && first_error.empty())
        first_error = "consumer " + std::to_string(i) + ": " + err;
    }
    if (!first_error.empty())
      return run_outcome::failed(first_error);
    return run_outcome::took(std::chrono::duration<double>(last - t0).count());
  }

  void finish(uint64_t) override {
    // Every consumer holds a lease: all but the last detach, the last
    // releases (dropping the slot's one reference, which frees it).
    for (size_t i = 0; i < cluster_.seats.size(); ++i)
      (void) cluster_.seats[i]->end(i + 1 == cluster_.seats.size());
  }

  void stop() override {
    cluster_.stop();
  }

private:
  ferry_knobs knobs_;
  int consumers_;
  std::optional<ucx_transport> rdma_;
  seated_owner cluster_;
  data_handle handle_;
};

} // namespace

std::unique_ptr<scenario_runner>
make_ferry_concurrent_runner(const bench_options& opts, int consumers) {
  return std::make_unique<concurrent_runner>(opts, consumers, std::nullopt);
}

std::unique_ptr<scenario_runner>
make_ferry_rdma_concurrent_runner(const bench_options& opts, int consumers,
                                  ucx_transport transport) {
  return std::make_unique<concurrent_runner>(opts, consumers, transport);
}

} // namespace ferry::bench
