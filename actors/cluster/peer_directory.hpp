// peer_directory: a read-mostly copy of the gateway's peer table that a
// consumer reads in place, without a message round trip to the gateway
// (one hop less on every get). The gateway is its only writer and stays the
// authority: a miss here only means "ask the gateway", which also answers
// for this node itself and names the error for an unknown worker.
// Thread-safe: readers share a lock, the gateway writes under it alone.
#pragma once

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include <caf/actor.hpp>
#include <caf/node_id.hpp>

namespace ferry {

class peer_directory {
public:
  struct entry {
    caf::actor owner; // the peer's owner actor (a proxy)
    // UCX GETs with this peer may go: registered on this node's UCX engine,
    // and the pair reads one-sided or this node allows emulated GETs
    // (rdma/one_sided_reads.hpp). False: its gets take the chunked path.
    bool ucx_gets = false;
    caf::actor messenger; // the peer's messenger (a proxy)
    // Rendezvous calls to this peer go over the control channel (UCX active
    // messages through this node's engine) instead of CAF requests.
    bool control_am = false;
    caf::actor gateway; // the peer's gateway (a proxy)
  };

  void put(uint64_t worker_id, entry e);
  void erase(uint64_t worker_id);
  /// Switches a known peer's calls to the control channel (or back).
  void set_control_am(uint64_t worker_id, bool on);
  std::optional<entry> find(uint64_t worker_id) const;
  /// True when a registered peer lives on `node` (its owner's node).
  bool knows_node(const caf::node_id& node) const;
  /// The worker id and entry of the registered peer on `node`.
  std::optional<std::pair<uint64_t, entry>> find_node(const caf::node_id& node) const;

private:
  mutable std::shared_mutex mx_;
  std::unordered_map<uint64_t, entry> peers_;
};

} // namespace ferry
