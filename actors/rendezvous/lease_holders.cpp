#include "actors/rendezvous/lease_holders.hpp"

namespace ferry {

uint64_t lease_holders::id_for(const caf::node_id& node) {
  auto i = nodes_.find(node);
  if (i == nodes_.end())
    i = nodes_.emplace(node, entry{next_id_++, {}}).first;
  return i->second.id;
}

bool lease_holders::watch(const caf::actor_addr& who) {
  id_for(who.node());
  return nodes_.at(who.node()).watched.insert(who).second;
}

void lease_holders::unwatch(const caf::actor_addr& who) {
  auto i = nodes_.find(who.node());
  if (i != nodes_.end())
    i->second.watched.erase(who);
}

std::optional<uint64_t> lease_holders::forget(const caf::node_id& node) {
  auto i = nodes_.find(node);
  if (i == nodes_.end())
    return std::nullopt;
  auto id = i->second.id;
  nodes_.erase(i);
  return id;
}

std::optional<caf::node_id> lease_holders::node_of(uint64_t id) const {
  for (const auto& [node, e] : nodes_)
    if (e.id == id)
      return node;
  return std::nullopt;
}

} // namespace ferry
