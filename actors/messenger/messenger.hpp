// messenger: a node's named handlers, called from other nodes and from
// local actors: fire-and-forget sends, unary calls, and streams with
// back-pressure. Payloads above the staging threshold travel by handle
// (transparent staging): the sender stages them on its owner, in arenas
// already mapped only, and puts the handle in the `_rv` header; the
// receiver fetches them (actors/messenger/staged_fetch.hpp) before the handler runs,
// so handlers only ever see bytes. The header rules, the fetch's bounds and
// the receiver's limit are protocol/staging_headers.hpp; stream credit is
// actors/messenger/stream_window.hpp; the bindings are actors/messenger/messenger_handlers.hpp.
// This actor is the shell that wires them to the owner, the consumer
// service and the peers.
//
// - A staged payload of a call with a timeout lives at most that long on
//   the sender (its TTL); one without lives at most the node's transfer
//   timeout, so a payload nobody fetches is freed either way; a call that
//   fails with an answer (an unknown handler, an error reply, its peer
//   gone) drops it at once.
// - Calls and streams to a node are failed at once when its messenger
//   goes down (it is monitored), never at a long timeout.
// Must never: block, run a handler function on its own thread, or let a
// forwarded `_rv` or `_rv_budget_ms` reach a handler or another message.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/cluster/peer_directory.hpp"
#include "actors/messenger/messenger_interface.hpp"
#include "actors/rendezvous/consumer_service.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "actors/rendezvous/warm_buffers.hpp"

namespace ferry {

struct messenger_metrics;

struct messenger_config {
  uint64_t staging_threshold = 256 * 1024; // DEFAULT_THRESHOLD
  // The longest this node fetches a staged payload (a call's budget may
  // end it sooner); stream items are exempt.
  std::chrono::milliseconds staged_fetch_timeout{300000};
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds transfer_timeout{300000};
  uint32_t stream_window = 8;  // items a stream's producer may run ahead
  size_t handler_threads = 4;  // threads that run function handlers
};

struct messenger_params {
  uint64_t worker_id = 0; // this node
  owner_actor owner;      // stages payloads that go by handle
  consumer_service_actor consumer; // fetches staged payloads
  std::shared_ptr<const peer_directory> peers; // a peer's messenger by worker id
  messenger_config cfg;
  messenger_metrics* metrics = nullptr;
  // Where handler threads give finished payloads back (null: freed).
  std::shared_ptr<warm_buffers> warm;
};

messenger_actor spawn_messenger(caf::actor_system& sys, messenger_params params);

} // namespace ferry
