#include "actors/cluster/peer_directory.hpp"

#include <mutex>

namespace ferry {

void peer_directory::put(uint64_t worker_id, entry e) {
  std::unique_lock<std::shared_mutex> lock{mx_};
  peers_[worker_id] = std::move(e);
}

void peer_directory::erase(uint64_t worker_id) {
  std::unique_lock<std::shared_mutex> lock{mx_};
  peers_.erase(worker_id);
}

void peer_directory::set_control_am(uint64_t worker_id, bool on) {
  std::unique_lock<std::shared_mutex> lock{mx_};
  if (auto i = peers_.find(worker_id); i != peers_.end())
    i->second.control_am = on;
}

std::optional<peer_directory::entry> peer_directory::find(uint64_t worker_id) const {
  std::shared_lock<std::shared_mutex> lock{mx_};
  auto i = peers_.find(worker_id);
  if (i == peers_.end())
    return std::nullopt;
  return i->second;
}

bool peer_directory::knows_node(const caf::node_id& node) const {
  std::shared_lock<std::shared_mutex> lock{mx_};
  for (const auto& [wid, e] : peers_)
    if (e.owner && e.owner.node() == node)
      return true;
  return false;
}

std::optional<std::pair<uint64_t, peer_directory::entry>>
peer_directory::find_node(const caf::node_id& node) const {
  std::shared_lock<std::shared_mutex> lock{mx_};
  for (const auto& [wid, e] : peers_)
    if (e.owner && e.owner.node() == node)
      return std::make_pair(wid, e);
  return std::nullopt;
}

} // namespace ferry
