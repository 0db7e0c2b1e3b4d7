#include "apps/job_coordinator.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/messenger/messenger_interface.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "apps/job_types.hpp"
#include "apps/job_worker.hpp"
#include "apps/shard_math.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"

namespace ferry::app {

namespace {

using clock_type = std::chrono::steady_clock;

struct shard_plan {
  uint64_t shard = 0;
  byte_buffer input; // sent as the call's payload (by handle: the messenger's business)
  uint64_t bytes = 0;
  uint64_t sorted_checksum = 0; // checksum of the locally sorted shard
  shard_stats expected;
  size_t worker = 0;
};

struct job_outcome {
  uint64_t verified = 0;
  uint64_t result_bytes = 0;
  std::string failure; // empty: success
};

struct coordinator_state {
  std::vector<shard_plan> plan;
  std::vector<uint64_t> worker_nodes; // worker ids of the nodes
  std::vector<std::string> worker_names;
  std::string handler; // the name the workers bound
  messenger_actor messenger;
  std::chrono::milliseconds timeout;
  std::shared_ptr<std::promise<job_outcome>> done;
  job_outcome outcome;
  clock_type::time_point start;
  bool finished = false;
  static inline const char* name = "ferry.job_coordinator";
};

using coordinator_ptr = caf::stateful_actor<coordinator_state>*;

void finish(coordinator_ptr self, std::string failure = {}) {
  auto& st = self->state;
  if (st.finished)
    return;
  st.finished = true;
  st.outcome.failure = std::move(failure);
  st.done->set_value(st.outcome);
  self->quit();
}

std::string verify(const shard_plan& p, const messenger::envelope& reply) {
  const auto& bytes = reply.payload;
  auto shard = reply.hdrs.find("shard");
  if (shard == reply.hdrs.end() || shard->second != std::to_string(p.shard))
    return "the answer names another shard";
  auto r = take_stats(reply.hdrs);
  if (!r)
    return "the answer's statistics are missing or malformed";
  if (bytes.size() != p.bytes)
    return "result has " + std::to_string(bytes.size()) + " bytes, expected "
           + std::to_string(p.bytes);
  if (!is_sorted_shard(bytes))
    return "result is not sorted";
  if (checksum64(bytes.data(), bytes.size()) != p.sorted_checksum)
    return "result differs from the local sort (checksum)";
  if (r->count != p.expected.count || r->sum != p.expected.sum)
    return "count or sum differs from the local computation";
  if (r->histogram != p.expected.histogram)
    return "histogram differs from the local computation";
  return {};
}

void on_result(coordinator_ptr self, size_t index, const messenger::envelope& reply) {
  auto& st = self->state;
  const auto& p = st.plan[index];
  auto problem = verify(p, reply);
  if (!problem.empty())
    return finish(self, "shard " + std::to_string(p.shard) + ": " + problem);
  ++st.outcome.verified;
  st.outcome.result_bytes += reply.payload.size();
  auto secs = std::chrono::duration<double>(clock_type::now() - st.start).count();
  std::printf("[job] %5.1fs  shard %llu/%zu sorted on %s and verified (%.1f MiB)\n",
              secs, static_cast<unsigned long long>(st.outcome.verified), st.plan.size(),
              st.worker_names[p.worker].c_str(),
              static_cast<double>(reply.payload.size()) / (1 << 20));
  std::fflush(stdout);
  if (st.outcome.verified == st.plan.size())
    finish(self);
}

caf::behavior coordinator(coordinator_ptr self, coordinator_state init) {
  self->state = std::move(init);
  self->state.start = clock_type::now();
  // A worker's node that goes down fails its calls at once (the messenger
  // monitors it).
  auto& st = self->state;
  for (size_t i = 0; i < st.plan.size(); ++i) {
    auto& p = st.plan[i];
    messenger::envelope call{st.handler, {{"shard", std::to_string(p.shard)}},
                             std::move(p.input)};
    self
      ->request(st.messenger, st.timeout + std::chrono::seconds{5}, msg_call_atom::value,
                st.worker_nodes[p.worker], std::move(call),
                static_cast<uint64_t>(st.timeout.count()))
      .then([=](messenger::envelope& reply) { on_result(self, i, reply); },
            [=](caf::error& err) {
              finish(self, "shard " + std::to_string(i) + ": " + describe(err));
            });
  }
  return {[](caf::ok_atom) {}};
}

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

} // namespace

int run_job(const job_options& opts, node_config cfg) {
  if (opts.nodes.empty()) {
    std::fprintf(stderr, "ferry job: no nodes given (--nodes HOST:PORT,...)\n");
    return 2;
  }
  cfg.listen = false;
  // Transparent staging uses arenas already mapped only: one at start lets
  // the shards take the RDMA path.
  cfg.map_arena_at_start = true;
  cfg.warm_buffer_prefill = false; // the job's workers get on their own nodes
  node n{cfg};
  if (auto err = n.start()) {
    std::fprintf(stderr, "ferry job: %s\n", describe(err).c_str());
    return 1;
  }
  // The handler name the workers bind: this job's own.
  char job_id[17];
  std::snprintf(job_id, sizeof job_id, "%016llx",
                static_cast<unsigned long long>(n.incarnation()));
  auto handler = std::string{"job.sort."} + job_id;

  // 1. Connect and spawn one worker per node through its gateway.
  std::vector<caf::actor> workers;
  std::vector<uint64_t> worker_nodes;
  std::vector<std::string> names;
  for (const auto& endpoint : opts.nodes) {
    auto hello = n.connect(endpoint);
    if (!hello) {
      std::fprintf(stderr, "ferry job: %s\n", describe(hello.error()).c_str());
      return 1;
    }
    auto worker = blocking_client{n}.spawn(caf::actor_cast<gateway_actor>(hello->gateway),
                                           sort_worker_name, caf::make_message(handler));
    if (!worker) {
      std::fprintf(stderr, "ferry job: spawn on %s failed: %s\n",
                   endpoint.c_str(), describe(worker.error()).c_str());
      return 1;
    }
    workers.push_back(std::move(*worker));
    names.push_back(endpoint);
    worker_nodes.push_back(hello->worker_id);
    std::printf("[job] connected to %s (worker %016llx), spawned a sort worker as "
                "handler '%s'\n",
                endpoint.c_str(), static_cast<unsigned long long>(hello->worker_id),
                handler.c_str());
  }

  // 2. Make the input shards and compute the expected results.
  auto shard_count = opts.nodes.size() * std::max<uint32_t>(1, opts.shards_per_node);
  auto shard_bytes = std::max<uint64_t>(4, opts.total_bytes / shard_count / 4 * 4);
  std::vector<shard_plan> plan;
  auto t_stage = clock_type::now();
  for (uint64_t s = 0; s < shard_count; ++s) {
    auto bytes = make_shard(opts.seed, s, shard_bytes);
    auto sorted = bytes;
    shard_plan p;
    p.shard = s;
    p.bytes = bytes.size();
    p.expected = sort_shard(sorted);
    p.sorted_checksum = checksum64(sorted.data(), sorted.size());
    p.worker = s % workers.size();
    p.input = std::move(bytes);
    plan.push_back(std::move(p));
    std::printf("[job] made shard %llu/%llu (%.1f MiB)\n",
                static_cast<unsigned long long>(s + 1),
                static_cast<unsigned long long>(shard_count), mib(shard_bytes));
  }
  std::printf("[job] made %.1f MiB in %zu shards in %.2fs; calling the workers\n",
              mib(shard_bytes * shard_count), plan.size(),
              std::chrono::duration<double>(clock_type::now() - t_stage).count());
  std::fflush(stdout);

  // 3. Run the coordinator actor and wait for its outcome.
  auto done = std::make_shared<std::promise<job_outcome>>();
  auto future = done->get_future();
  coordinator_state init;
  init.plan = std::move(plan);
  init.worker_nodes = worker_nodes;
  init.worker_names = names;
  init.handler = handler;
  init.messenger = n.messenger();
  init.timeout = cfg.transfer_timeout();
  init.done = done;
  auto t0 = clock_type::now();
  n.system().spawn(coordinator, std::move(init));
  if (future.wait_for(cfg.transfer_timeout() + std::chrono::seconds{5})
      != std::future_status::ready) {
    std::fprintf(stderr, "ferry job: timed out after %lld ms\n",
                 static_cast<long long>(cfg.transfer_timeout().count()));
    return 1;
  }
  auto outcome = future.get();
  auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  for (auto& w : workers)
    caf::anon_send_exit(w, caf::exit_reason::user_shutdown);

  // 4. Summary.
  auto input_bytes = shard_bytes * shard_count;
  auto moved = input_bytes + outcome.result_bytes;
  auto& paths = n.paths();
  // Path decisions on this node, both roles (owner: inputs; consumer: results).
  double chunked = 0;
  for (auto r : {path_reason::no_offer, path_reason::not_configured,
                 path_reason::kill_switch, path_reason::not_pinned,
                 path_reason::below_min, path_reason::decode_error,
                 path_reason::pool_exhausted, path_reason::get_failed})
    chunked += paths.value(transfer_path::chunked, r);
  auto rdma_ok = paths.value(transfer_path::rdma, path_reason::ok);
  std::printf("\n[job] summary\n"
              "  nodes               %zu\n"
              "  shards              %zu verified of %zu\n"
              "  bytes moved         %.1f MiB (inputs %.1f MiB out, results "
              "%.1f MiB back)\n"
              "  time                %.2f s\n"
              "  throughput          %.1f MiB/s\n"
              "  path decisions      rdma ok: %.0f, chunked: %.0f (this node, "
              "owner and consumer)\n"
              "  result              %s\n",
              workers.size(), static_cast<size_t>(outcome.verified), static_cast<size_t>(shard_count),
              mib(moved), mib(input_bytes), mib(outcome.result_bytes), secs,
              mib(moved) / secs, rdma_ok, chunked,
              outcome.failure.empty() ? "OK" : outcome.failure.c_str());
  std::fflush(stdout);
  if (!opts.summary_json.empty()) {
    nlohmann::json j{{"nodes", workers.size()},
                     {"shards", static_cast<size_t>(shard_count)},
                     {"verified", outcome.verified},
                     {"bytes_moved", moved},
                     {"seconds", secs},
                     {"rdma_ok", rdma_ok},
                     {"chunked", chunked},
                     {"ok", outcome.failure.empty()},
                     {"failure", outcome.failure}};
    std::ofstream{opts.summary_json} << j.dump(2) << "\n";
  }
  return outcome.failure.empty() ? 0 : 1;
}

} // namespace ferry::app
