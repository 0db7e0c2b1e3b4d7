#include "bench/owner_peer.hpp"

#include <chrono>

namespace ferry::bench {

using namespace std::chrono_literals;

std::string owner_peer::start(const ferry_knobs& knobs, bool rdma,
                              const std::vector<std::string>& env) {
  std::vector<std::string> args{"--role", "ferry-owner"};
  if (knobs.chunk_size > 0)
    args.insert(args.end(), {"--chunk-size", std::to_string(knobs.chunk_size)});
  if (!knobs.scheduler_policy.empty())
    args.insert(args.end(), {"--scheduler-policy", knobs.scheduler_policy});
  if (knobs.eager_endpoints)
    args.push_back("--eager-endpoints");
  if (knobs.caf_control)
    args.push_back("--caf-control");
  if (knobs.chunked_ucx)
    args.push_back("--chunked-ucx");
  if (knobs.scheduler_threads > 0)
    args.insert(args.end(),
                {"--scheduler-threads", std::to_string(knobs.scheduler_threads)});
  if (rdma)
    args.push_back("--rdma");
  if (auto err = peer_.spawn(args, env); !err.empty())
    return err;
  std::string err;
  auto port = peer_.await_ready(1, 30s, &err);
  if (!err.empty())
    return "ferry owner: " + err;
  endpoint_ = "127.0.0.1:" + port[0];
  return {};
}

data_handle owner_peer::stage(uint64_t bytes, std::string* error, bool pinned) {
  auto command = std::string{pinned ? "stage pinned " : "stage "} + std::to_string(bytes);
  auto words = split_words(peer_.ask(command, 120s, error));
  if (!error->empty())
    return {};
  std::optional<data_handle> h;
  if (words.size() == 2 && words[0] == "handle")
    h = parse_data_handle(words[1]);
  if (!h) {
    *error = "unexpected answer to stage";
    return {};
  }
  return *h;
}

void owner_peer::stop() {
  peer_.stop();
}

node_config consumer_node_config(const ferry_knobs& knobs, bool rdma) {
  node_config cfg;
  cfg.ucx = rdma || knobs.chunked_ucx;
  cfg.rdma_enabled = rdma;
  cfg.listen = false;
  cfg.eager_endpoints = knobs.eager_endpoints;
  if (knobs.caf_control)
    cfg.control_channel = "caf";
  // The RDMA rows measure the GET at every size: no payload in the answer
  // to the acquire (ferry_chunked's small points take that way).
  if (rdma)
    cfg.eager_max = 0;
  else if (knobs.consumer_eager_max >= 0)
    cfg.eager_max = static_cast<uint64_t>(knobs.consumer_eager_max);
  cfg.metrics_port = -1;
  cfg.log_level = "warn";
  if (knobs.pull_window > 0)
    cfg.pull_window = knobs.pull_window;
  if (knobs.chunk_size > 0)
    cfg.chunk_size = knobs.chunk_size;
  if (!knobs.scheduler_policy.empty())
    cfg.scheduler_policy = knobs.scheduler_policy;
  if (knobs.scheduler_threads > 0)
    cfg.scheduler_threads = knobs.scheduler_threads;
  return cfg;
}

} // namespace ferry::bench
