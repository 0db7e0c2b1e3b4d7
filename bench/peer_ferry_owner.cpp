// The ferry-owner role: a listening ferry::node. "stage SIZE" registers a
// payload of SIZE bytes (the pattern) with its owner and answers
// "handle <text>"; "stage pinned SIZE" stages it with register_data_pinned
// (registered memory, the RDMA path) and answers an error instead where the
// owner could only stage it in plain memory. The consumer side releases it
// when done.
// With --rdma the node runs the UCX transport its environment selects and
// grants the RDMA path at every size (rdma_min_bytes 0), so the RDMA rows
// measure that path from 4 KiB up rather than chunks below 64 KiB.
#include <cstdint>

#include "bench/path_check.hpp"
#include "bench/payload.hpp"
#include "bench/peer_process.hpp"
#include "bench/peer_roles.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"

namespace ferry::bench {

namespace {

// Stages `size` bytes; the answer line for the driver.
std::string stage(node& n, blocking_client& client, uint64_t size, bool pinned) {
  if (!pinned) {
    auto h = client.register_data(make_payload_vector(size));
    return h ? "handle " + to_string(*h) : "error " + describe(h.error());
  }
  if (!n.has_ucx())
    return "error cannot stage pinned: this owner has no UCX transport";
  auto before = read_paths(n);
  auto h = client.register_data_pinned(make_payload_vector(size));
  if (!h)
    return "error " + describe(h.error());
  // register_data_pinned never fails: a refusal shows as a chunked reason.
  // (The plain slot stays until the peer exits: the point fails anyway.)
  if (auto why = chunked_reasons(before, read_paths(n)); !why.empty())
    return "error staged in plain memory, not pinned (" + why + ")";
  return "handle " + to_string(*h);
}

} // namespace

int run_ferry_owner_peer(const peer_options& opts) {
  node_config cfg;
  cfg.bind_host = "127.0.0.1";
  cfg.port = 0;
  cfg.log_level = "warn";
  cfg.ucx = opts.rdma || opts.knobs.chunked_ucx;
  cfg.rdma_enabled = opts.rdma;
  cfg.eager_endpoints = opts.knobs.eager_endpoints;
  if (opts.knobs.caf_control)
    cfg.control_channel = "caf";
  if (opts.rdma)
    cfg.rdma_min_bytes = 0;
  if (opts.knobs.chunk_size > 0)
    cfg.chunk_size = opts.knobs.chunk_size;
  if (!opts.knobs.scheduler_policy.empty())
    cfg.scheduler_policy = opts.knobs.scheduler_policy;
  if (opts.knobs.scheduler_threads > 0)
    cfg.scheduler_threads = opts.knobs.scheduler_threads;
  node n{cfg};
  if (opts.rdma && !n.has_ucx()) {
    peer_say("error the owner node has no UCX transport");
    return 1;
  }
  if (auto err = n.start()) {
    peer_say("error " + describe(err));
    return 1;
  }
  blocking_client client{n};
  peer_say("ready " + std::to_string(n.port()));
  std::string line;
  while (peer_hear(&line) && line != "quit") {
    auto words = split_words(line);
    if (words.size() == 2 && words[0] == "stage")
      peer_say(stage(n, client, std::stoull(words[1]), false));
    else if (words.size() == 3 && words[0] == "stage" && words[1] == "pinned")
      peer_say(stage(n, client, std::stoull(words[2]), true));
    else
      peer_say("error unknown command '" + line + "'");
  }
  n.stop();
  return 0;
}

} // namespace ferry::bench
