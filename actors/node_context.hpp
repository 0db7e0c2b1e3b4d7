// node_context: the handles a worker actor on a node uses to reach ferry:
// its owner (to stage bytes), its consumer service (to pull them), its
// messenger (named handlers across nodes) and the node's warm buffers (where
// a result the worker is done with goes back, for a later get to land in).
// Worker factories receive it when a gateway spawns them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>

#include "actors/rendezvous/consumer_service.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "actors/rendezvous/warm_buffers.hpp"
#include "protocol/byte_buffer.hpp"

namespace ferry {

class lost_peers; // actors/cluster/lost_peers.hpp

struct node_context {
  uint64_t worker_id = 0;
  owner_actor owner;
  consumer_service_actor consumer;
  // Named handlers: calls to other nodes' handlers, and binding this node's
  // own (actors/messenger/messenger_interface.hpp).
  caf::actor messenger;
  // The peers this node lost: its gateway writes it, its hellos tell it.
  std::shared_ptr<lost_peers> lost;
  // Large buffers kept warm for the next results (null: the node keeps none,
  // --warm-buffer-bytes 0). Shared with the consumers and the messenger.
  std::shared_ptr<warm_buffers> warm;
  std::chrono::milliseconds request_timeout{10000};  // one request
  std::chrono::milliseconds transfer_timeout{300000}; // one whole transfer

  /// The bound on a get (a whole transfer, then its answer).
  std::chrono::milliseconds get_timeout() const {
    return transfer_timeout + request_timeout;
  }

  /// Hands back a result the caller is done with (a get's bytes, or any
  /// buffer). A large one (4 MiB and up, within --warm-buffer-bytes) is
  /// kept with its pages faulted in, and a later large get's result lands
  /// in it: no zero fill and no fresh pages, about 40% of a 16 MiB RDMA get
  /// over shared memory (docs/performance.md). Otherwise it is freed.
  /// Optional; any thread. `bytes` is left empty.
  void give_back(byte_buffer&& bytes) const {
    if (warm)
      warm->give(std::move(bytes));
    else
      byte_buffer{}.swap(bytes);
  }
};

/// Builds a worker actor from the arguments of a spawn request.
using worker_factory = std::function<caf::expected<caf::actor>(
  caf::actor_system&, const node_context&, const caf::message& args)>;

/// Worker types a node can spawn on request, by name.
using worker_registry = std::map<std::string, worker_factory>;

} // namespace ferry
