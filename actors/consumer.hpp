// consumer: drives one get from the handle's owner: finds the owner, takes a
// lease with _rv_acquire, and either GETs the payload with UCX (when the
// owner answers with a descriptor) or pulls chunks with a bounded window in
// flight, then answers its requester. One actor per transfer at a time:
// after a clean finish it goes back to the consumer service for the next
// get (a failed one quits, since replies of its get may still arrive).
//
// RDMA: the offer comes from local facts only (a registry, the kill switch
// off, the owner registered on UCX). A descriptor that does not decode, no
// registered destination, or a failed GET falls back exactly once: detach,
// acquire with no offer, pull chunks. A second descriptor is an error. While
// the GET runs, _rv_lease_renew goes out every half lease timeout (5 ms floor).
//
// It monitors the owner: a dead owner fails the get at once (a request in
// flight to a dead node would otherwise only end at its timeout), and every
// request carries consumer_config::request_timeout. On any failure after the
// lease was granted it detaches the lease, best effort.
//
// Messages it answers (once, then it quits):
//   (get_atom, data_handle)                    -> (byte_buffer, lease_id)
//   (get_into_atom, data_handle, mutable_bytes) -> (bytes_written, lease_id)
// Must never: write past a caller buffer, or trust the owner's sizes without
// checking them against the buffer and staged_payload_max.
#pragma once

#include <cstdint>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>

#include "actors/arena_pool_actor.hpp"
#include "actors/consumer_config.hpp"
#include "actors/gateway_interface.hpp"
#include "actors/ucx_engine.hpp"
#include "actors/owner_interface.hpp"
#include "actors/peer_directory.hpp"
#include "protocol/byte_buffer.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::mutable_bytes)

namespace ferry {

struct consumer_metrics;
struct rdma_metrics;

/// What a consumer needs to know about the node it runs on.
struct consumer_context {
  gateway_actor directory;  // resolves a worker id to its owner
  std::shared_ptr<const peer_directory> peers; // the gateway's table, read in place
  consumer_config cfg;
  consumer_metrics* metrics = nullptr;
  // The RDMA path (empty without UCX): destination blocks and GETs.
  arena_pool_actor pool;
  ucx_engine_ref engine;
  rdma_metrics* rdma = nullptr;
  // Where a consumer that finished cleanly reports itself idle, to serve
  // the next get (the consumer service); unset: it quits after one get.
  caf::actor recycle_to;
};

caf::actor spawn_consumer(caf::actor_system& sys, const consumer_context& ctx);

} // namespace ferry
