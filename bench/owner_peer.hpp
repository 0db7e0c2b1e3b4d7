// owner_peer: the driver's handle on a `ferry bench-peer --role ferry-owner`
// process — an owner node in another process that stages payloads on
// request — and the node_config of the consumer nodes that pull from it.
// Both sides get the same knobs (chunk size, scheduler) from the options.
// An RDMA owner runs the UCX transport chosen by its environment (given at
// spawn: transport_env.hpp) and stages with register_data_pinned.
// Owns: the peer process. Must never: stage without being started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/peer_process.hpp"
#include "protocol/data_handle.hpp"
#include "runtime/node_config.hpp"

namespace ferry::bench {

class owner_peer {
public:
  /// Starts the owner; empty string on success, else why not. Without
  /// `rdma` the owner node has no UCX transport (the chunked path alone);
  /// with it, `env` ("K=V": UCX_TLS, ...) selects the transport.
  std::string start(const ferry_knobs& knobs, bool rdma = false,
                    const std::vector<std::string>& env = {});
  /// Stages `bytes` of the payload pattern; the handle or *error. `pinned`
  /// stages in registered memory and fails (*error) where the owner could
  /// only stage in plain memory.
  data_handle stage(uint64_t bytes, std::string* error, bool pinned = false);
  void stop();

  /// "127.0.0.1:PORT"
  const std::string& endpoint() const { return endpoint_; }
  /// The owner process (its memory: /proc/<pid>/status).
  int pid() const { return peer_.pid(); }

private:
  peer_process peer_;
  std::string endpoint_;
};

/// A non-listening consumer node's config with the bench's knobs applied;
/// without `rdma` it has no UCX transport and makes no RDMA offer.
node_config consumer_node_config(const ferry_knobs& knobs, bool rdma = false);

} // namespace ferry::bench
