// fanin_64_chunked, fanin_64_rdma_sm: 64 consumers against one owner that
// stages fanin_handles payloads of the point's size. Each run gets every
// handle once, the consumers taking them in turn (consumer i gets handles
// i, i + 64, ...). The consumers are 64 threads over 8 consumer nodes (8
// each, as 8 hosts with 8 workers), and each get is timed on its own: the
// point reports the run's seconds and each get's p50 and p99.
// Every get's bytes are verified and its lease detached right after it
// (outside its own time, inside the run's). A run fails when any get
// failed (a request that timed out included), or when after it the owner
// holds a lease or a transfer, staged a byte more or less than before, or
// its peak memory grew by more than 64 gets in flight can hold (fanin_slack).
// The RDMA row stages pinned and runs UCX over shared memory on both sides;
// every get must have taken the RDMA path (path_check.hpp).
// finish() releases every handle, so the owner frees what prepare staged.
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/consumer_seat.hpp"
#include "bench/machine_info.hpp"
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

constexpr int fanin_consumers = 64;
constexpr int fanin_nodes = 8;
// What 64 gets in flight may hold on the owner at once: a window of 512 KiB
// chunks each (serialised into its connection's buffer), with room to spare.
constexpr uint64_t fanin_slack = fanin_consumers * 4 * MiB;

/// The peak resident memory of process `pid` (VmHWM), in bytes; 0 unknown.
uint64_t peak_rss(int pid) {
  return process_memory_bytes(pid, "VmHWM");
}

/// What the owner's store holds now, from its node's stat.
struct owner_store {
  uint64_t slots = 0, staged_bytes = 0, leases = 0, transfers = 0;
};

std::optional<owner_store> read_store(consumer_seat& seat, std::string* error) {
  auto text = seat.client().stat(seat.owner_gateway());
  if (!text) {
    *error = "owner stat: " + describe(text.error());
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("owner") || !j["owner"].is_object()) {
    *error = "owner stat has no owner section";
    return std::nullopt;
  }
  const auto& o = j["owner"];
  return owner_store{o.value("slots", uint64_t{0}), o.value("staged_bytes", uint64_t{0}),
                     o.value("leases", uint64_t{0}), o.value("transfers", uint64_t{0})};
}

class fanin_runner : public scenario_runner {
public:
  fanin_runner(const bench_options& opts, std::optional<ucx_transport> rdma)
    : knobs_(opts.knobs), handle_count_(static_cast<size_t>(opts.fanin_handles)), rdma_(rdma) {}

  std::string start() override { return cluster_.start(knobs_, rdma_, fanin_nodes, "consumer node"); }

  std::string prepare(uint64_t bytes) override {
    handles_list_.clear();
    std::string err;
    for (size_t i = 0; i < handle_count_; ++i) {
      handles_list_.push_back(cluster_.owner.stage(bytes, &err, rdma_.has_value()));
      if (!err.empty())
        return "staging handle " + std::to_string(i) + ": " + err;
    }
    auto store = read_store(*cluster_.seats.front(), &err);
    if (!store)
      return err;
    baseline_ = *store;
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    std::vector<path_counts> before;
    if (rdma_)
      for (auto& seat : cluster_.seats)
        before.push_back(read_paths(seat->host()));
    const auto peak_before = peak_rss(cluster_.owner.pid());
    std::vector<std::vector<double>> seconds(fanin_consumers);
    std::vector<std::string> first_error(fanin_consumers);
    std::vector<size_t> failures(fanin_consumers, 0);
    std::vector<int> gets_per_node(fanin_nodes, 0);
    for (int c = 0; c < fanin_consumers; ++c)
      for (size_t k = static_cast<size_t>(c); k < handles_list_.size(); k += fanin_consumers)
        ++gets_per_node[static_cast<size_t>(c % fanin_nodes)];
    auto t0 = clock_type::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < fanin_consumers; ++c)
      threads.emplace_back([&, c] { consume(c, bytes, seconds[c], first_error[c], failures[c]); });
    for (auto& t : threads)
      t.join();
    auto took = std::chrono::duration<double>(clock_type::now() - t0).count();

    size_t failed = 0;
    std::string why;
    for (int c = 0; c < fanin_consumers; ++c) {
      failed += failures[c];
      if (why.empty() && !first_error[c].empty())
        why = "consumer " + std::to_string(c) + ": " + first_error[c];
    }
    if (failed > 0)
      return run_outcome::failed(std::to_string(failed) + " of "
                                 + std::to_string(handles_list_.size())
                                 + " gets failed; first: " + why);
    if (rdma_)
      for (size_t n = 0; n < cluster_.seats.size(); ++n)
        if (auto err = expect_rdma(before[n], read_paths(cluster_.seats[n]->host()),
                                   gets_per_node[n]);
            !err.empty())
          return run_outcome::failed("consumer node " + std::to_string(n) + ": " + err);
    if (auto err = owner_back_at_baseline(); !err.empty())
      return run_outcome::failed(err);
    const auto peak_after = peak_rss(cluster_.owner.pid());
    if (peak_before > 0 && peak_after > peak_before + fanin_slack)
      return run_outcome::failed("the owner's peak memory grew by "
                                 + std::to_string((peak_after - peak_before) >> 20)
                                 + " MiB in one run, over "
                                 + std::to_string(fanin_slack >> 20) + " MiB");
    std::vector<double> all;
    for (auto& s : seconds)
      all.insert(all.end(), s.begin(), s.end());
    return run_outcome::took(took, std::move(all));
  }

  void finish(uint64_t) override {
    // Every handle once more, released: the slots go (untimed).
    std::vector<std::thread> threads;
    for (int c = 0; c < fanin_consumers; ++c)
      threads.emplace_back([&, c] {
        auto& client = cluster_.seats[static_cast<size_t>(c % fanin_nodes)]->client();
        for (size_t k = static_cast<size_t>(c); k < handles_list_.size(); k += fanin_consumers)
          if (auto got = client.get(handles_list_[k]))
            (void) client.release(handles_list_[k], got->lease_id);
      });
    for (auto& t : threads)
      t.join();
    handles_list_.clear();
  }

  void stop() override {
    cluster_.stop();
  }

private:
  /// Consumer `c`: its handles in turn, each get timed, verified, detached.
  void consume(int c, uint64_t bytes, std::vector<double>& seconds, std::string& error,
               size_t& failures) {
    auto& client = cluster_.seats[static_cast<size_t>(c % fanin_nodes)]->client();
    for (size_t k = static_cast<size_t>(c); k < handles_list_.size(); k += fanin_consumers) {
      const auto& h = handles_list_[k];
      auto t0 = clock_type::now();
      auto got = client.get(h);
      seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
      std::string why = got ? check_payload(got->bytes.data(), got->bytes.size(), bytes)
                            : describe(got.error());
      if (got)
        if (auto err = client.detach(h, got->lease_id); err && why.empty())
          why = "detach: " + describe(err);
      if (!why.empty()) {
        ++failures;
        if (error.empty())
          error = "handle " + std::to_string(k) + ": " + why;
      }
    }
  }

  /// Empty when the owner holds no lease and no transfer and stages what it
  /// did before the run (detaches travel as requests, but the check waits a
  /// bounded while for the last of them).
  std::string owner_back_at_baseline() {
    std::string err;
    std::optional<owner_store> now;
    auto deadline = clock_type::now() + std::chrono::seconds(5);
    do {
      now = read_store(*cluster_.seats.front(), &err);
      if (!now)
        return err;
      if (now->leases == 0 && now->transfers == 0)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (clock_type::now() < deadline);
    if (now->leases != 0 || now->transfers != 0)
      return "after the run the owner still holds " + std::to_string(now->leases)
             + " leases and " + std::to_string(now->transfers) + " transfers";
    if (now->slots != baseline_.slots || now->staged_bytes != baseline_.staged_bytes)
      return "the owner's store changed in the run: " + std::to_string(now->slots)
             + " slots of " + std::to_string(now->staged_bytes) + " bytes, before "
             + std::to_string(baseline_.slots) + " of "
             + std::to_string(baseline_.staged_bytes);
    return {};
  }

  ferry_knobs knobs_;
  size_t handle_count_;
  std::optional<ucx_transport> rdma_;
  seated_owner cluster_;
  std::vector<data_handle> handles_list_;
  owner_store baseline_;
};

} // namespace

std::unique_ptr<scenario_runner> make_fanin_runner(const bench_options& opts) {
  return std::make_unique<fanin_runner>(opts, std::nullopt);
}

std::unique_ptr<scenario_runner> make_fanin_rdma_runner(const bench_options& opts,
                                                        ucx_transport transport) {
  return std::make_unique<fanin_runner>(opts, transport);
}

} // namespace ferry::bench
