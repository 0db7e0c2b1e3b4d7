// ucx_peer_link: this process's side of a bench row against a `ucx` bench
// peer (bench/peer_ucx.cpp): a UCX context, a worker and an endpoint to the
// worker address the peer offered.
// Owns the three; close() ends them in order, the endpoint first (its close
// flushes through the live peer), so call it before stopping the peer.
#pragma once

#ifdef FERRY_BENCH_WITH_UCX

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry::bench {

struct ucx_peer_link {
  std::optional<ucx_context> context;
  std::optional<ucx_worker> worker;
  std::optional<ucx_endpoint> endpoint;

  /// Creates the context (with UCP_FEATURE_AM when `active_messages`) and
  /// the worker, and connects to `peer_address`. Empty: open; else why not.
  std::string open(const std::vector<uint8_t>& peer_address, bool active_messages);
  void close();
};

} // namespace ferry::bench

#endif
