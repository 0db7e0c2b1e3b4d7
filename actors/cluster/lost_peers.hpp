// lost_peers: the peers this node saw leave (their gateway went down) and
// has not registered again. A peer may not have noticed: if its side of the
// connection held (it was stopped, or a redial reached it first), it still
// counts this node's leases, copies and streams as live, though this node
// ended them all. So a hello tells the peer "you were lost to me"
// ("lost:" and the 16-hex-digit worker ids, one capability), and a node
// that reads its own id there ends that peer's old session before it
// registers the new one (actors/cluster/gateway.cpp).
// Thread-safe: the gateway writes it, node::hello reads it. Holds at most
// `max_kept` ids (the oldest go first). Must never: name a peer that was
// registered again since, or accept an id it cannot parse whole.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ferry {

class lost_peers {
public:
  // 14 ids of 16 hex digits, with "lost:" and the commas, fit the 255
  // characters a hello's capability may have.
  static constexpr size_t max_kept = 14;

  /// `worker_id` left without this node's say.
  void lost(uint64_t worker_id);

  /// `worker_id` is registered again: no longer lost.
  void back(uint64_t worker_id);

  bool is_lost(uint64_t worker_id) const;

  /// The hello capability naming every lost peer; none when there is none.
  std::optional<std::string> capability() const;

private:
  mutable std::mutex mx_;
  std::deque<uint64_t> ids_;
};

/// The capability naming just `worker_id` as lost.
std::string lost_capability(uint64_t worker_id);

/// True when a hello's capabilities say its sender lost `me` (a "lost:"
/// capability naming it; a malformed one names nobody).
bool says_it_lost(const std::vector<std::string>& capabilities, uint64_t me);

/// The capabilities without the "lost:" one (it is for one hello only).
std::vector<std::string> without_lost(std::vector<std::string> capabilities);

} // namespace ferry
