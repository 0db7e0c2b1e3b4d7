// consumer_seat: one consumer node connected to the owner peer, with the
// lease of its last get. Bench rows keep the payload staged across runs by
// ending each lease with detach; the row's last lease ends with release,
// which also drops the owner's one reference and frees the slot.
// A seat of an RDMA row runs the UCX transport (with whatever UCX_TLS this
// process has when it is built) and offers the RDMA path.
// Owns: the node (its actor system) and the lease it holds.
// Must never: be used from two threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bench/bench_options.hpp"
#include "protocol/data_handle.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"

namespace ferry::bench {

class consumer_seat {
public:
  /// Starts a node and connects it to `owner_endpoint`; check error().
  /// Without `rdma` the node has no UCX transport (the chunked path alone).
  consumer_seat(const ferry_knobs& knobs, const std::string& owner_endpoint,
                bool rdma = false);
  ~consumer_seat();

  const std::string& error() const { return error_; }
  blocking_client& client() { return *client_; }
  /// The seat's node (its path counters: bench/path_check.hpp).
  ferry::node& host() { return *node_; }
  /// The owner's gateway, as its hello named it (its stat).
  const gateway_actor& owner_gateway() const { return owner_gateway_; }

  /// Holds `lease` of `h`, detaching the one held before (if any).
  std::string hold(const data_handle& h, uint64_t lease);
  /// Ends the held lease: release (drops the slot's reference) or detach.
  std::string end(bool release);

private:
  std::unique_ptr<node> node_;
  std::unique_ptr<blocking_client> client_;
  gateway_actor owner_gateway_;
  std::string error_;
  data_handle held_;
  uint64_t lease_ = 0;
  bool holding_ = false;
};

/// Replaces `seat` with a fresh one connected to `owner_endpoint`: a row's
/// first seat, or a cold row's next pair. An old seat ends its lease with
/// detach (the payload stays staged for the new one) and its node stops
/// before the new node starts. On an error `seat` is left empty.
std::string reseat(std::unique_ptr<consumer_seat>& seat, const ferry_knobs& knobs,
                   const std::string& owner_endpoint, bool rdma);

/// Waits (at most 5 s) until `n`'s UCX engine finished its eager wireups:
/// an endpoint created at the hello and no wireup still pending.
std::string await_eager_wireup(node& n);

} // namespace ferry::bench
