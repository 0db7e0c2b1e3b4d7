// The ferry-owner role: a listening ferry::node. "stage SIZE" registers a
// payload of SIZE bytes (the pattern) with its owner and answers
// "handle <text>"; the consumer side releases it when done.
#include <cstdint>

#include "apps/bench/payload.hpp"
#include "apps/bench/peer_process.hpp"
#include "apps/bench/peer_roles.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"

namespace ferry::bench {

int run_ferry_owner_peer(const peer_options& opts) {
  node_config cfg;
  cfg.bind_host = "127.0.0.1";
  cfg.port = 0;
  cfg.log_level = "warn";
  cfg.ucx = opts.rdma;
  cfg.rdma_enabled = opts.rdma;
  if (opts.knobs.chunk_size > 0)
    cfg.chunk_size = opts.knobs.chunk_size;
  if (!opts.knobs.scheduler_policy.empty())
    cfg.scheduler_policy = opts.knobs.scheduler_policy;
  if (opts.knobs.scheduler_threads > 0)
    cfg.scheduler_threads = opts.knobs.scheduler_threads;
  node n{cfg};
  if (auto err = n.start()) {
    peer_say("error " + describe(err));
    return 1;
  }
  blocking_client client{n};
  peer_say("ready " + std::to_string(n.port()));
  std::string line;
  while (peer_hear(&line) && line != "quit") {
    auto words = split_words(line);
    if (words.size() == 2 && words[0] == "stage") {
      auto size = std::stoull(words[1]);
      auto h = client.register_data(make_payload_vector(size));
      if (!h)
        peer_say("error " + describe(h.error()));
      else
        peer_say("handle " + to_string(*h));
    } else {
      peer_say("error unknown command '" + line + "'");
    }
  }
  n.stop();
  return 0;
}

} // namespace ferry::bench
