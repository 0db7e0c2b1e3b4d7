// lease_holders: which node took each lease on this owner, so that a node
// that goes away takes its leases with it. Holders are small integer ids
// (0 is this node itself, whose leases never go this way); the slot store
// keeps the id on each lease. It also remembers which actors of each node
// the owner monitors: the middleman kills every proxy of a node whose
// connection drops, so one monitored actor of a node is enough to notice.
// A plain table: no actors, no clock. Must never: hand out 0 for a remote
// node, or reuse the id of a node that went away.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include <caf/actor_addr.hpp>
#include <caf/node_id.hpp>

namespace ferry {

class lease_holders {
public:
  /// The holder id of `node` (a new one the first time).
  uint64_t id_for(const caf::node_id& node);

  /// True when `who` was not watched yet: the caller monitors it then.
  bool watch(const caf::actor_addr& who);

  /// A watched actor ended on its own; its node may still be there.
  void unwatch(const caf::actor_addr& who);

  /// `node` went away: answers its holder id (to drop its leases) and
  /// forgets it, or nullopt for a node that never held a lease here.
  std::optional<uint64_t> forget(const caf::node_id& node);

  /// The node behind holder `id`, while it is known.
  std::optional<caf::node_id> node_of(uint64_t id) const;

  size_t nodes() const { return nodes_.size(); }

private:
  struct entry {
    uint64_t id = 0;
    std::set<caf::actor_addr> watched;
  };
  std::map<caf::node_id, entry> nodes_;
  uint64_t next_id_ = 1;
};

} // namespace ferry
