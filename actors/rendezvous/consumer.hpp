// consumer: the actor that runs one get at a time. Its rules (the offer,
// the size checks, chunk windows, the one fallback, renewals, detach and
// hold) live in the plain state machine `transfer` (actors/rendezvous/transfer.hpp);
// this actor is the shell around it: it finds the owner, monitors it and
// the caller, turns answers into the machine's events and the machine's
// commands into requests (to the owner, the arena pool and the UCX engine),
// and drives where the bytes go (chunks into their place, a GET's block
// copied out: the plain structure get_destination.hpp).
// After a clean finish it goes back to the consumer service for the next
// get (a failed one quits, since replies of its get may still arrive).
//
// Every request carries consumer_config::request_timeout (a GET the
// transfer_timeout); a dead owner fails the get at once (a request in
// flight to a dead node would otherwise only end at its timeout).
//
// Messages it answers (once per get):
//   (get_atom, data_handle)                    -> (byte_buffer, lease_id)
//   (fetch_atom, data_handle)                  -> (byte_buffer), released
//   (path_probe_atom, data_handle)  -> (byte_buffer, lease_id, path, reason)
//   (get_into_atom, data_handle, mutable_bytes) -> (bytes_written, lease_id)
//   (get_into_atom, data_handle, pinned_ptr)    -> (bytes_written, lease_id)
//   (get_pinned_atom, data_handle)        -> (pinned_ptr, size, lease_id)
// Must never: write past a caller buffer, or allocate what the machine has
// not checked.
#pragma once

#include <cstdint>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>

#include "actors/cluster/gateway_interface.hpp"
#include "actors/cluster/peer_directory.hpp"
#include "actors/rdma/ucx_engine.hpp"
#include "actors/rdma/rdma_reader.hpp"
#include "actors/rendezvous/consumer_config.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "actors/rendezvous/warm_buffers.hpp"
#include "protocol/byte_buffer.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::mutable_bytes)

namespace ferry {

struct consumer_metrics;
struct rdma_metrics;

/// What a consumer needs to know about the node it runs on.
struct consumer_context {
  gateway_actor directory;  // resolves a worker id to its owner
  uint64_t node_id = 0;     // this node's worker id: calls to its own owner are local
  std::shared_ptr<const peer_directory> peers; // the gateway's table, read in place
  consumer_config cfg;
  consumer_metrics* metrics = nullptr;
  // The RDMA path (null without UCX): destination blocks and GETs.
  std::shared_ptr<rdma_reader> reader;
  rdma_metrics* rdma = nullptr;
  // The UCX engine when it serves the control channel: calls to a peer the
  // directory marks control_am go through it (actors/rendezvous/owner_route.hpp).
  ucx_engine_ref channel;
  // Copies a finished GET out of its destination off this actor's thread
  // (actors/rendezvous/bulk_copier.hpp); empty: copies run inline.
  caf::actor copier;
  // Warm buffers a result may take its room from (null: always fresh).
  std::shared_ptr<warm_buffers> warm;
  // Told the size of each large plain get result delivered, to prepare a
  // warm buffer for the next one (actors/rendezvous/result_prefiller.hpp);
  // unset: none is prepared.
  caf::actor prefill;
  // Where a consumer that finished cleanly reports itself idle, to serve
  // the next get (the consumer service); unset: it quits after one get.
  caf::actor recycle_to;
};

caf::actor spawn_consumer(caf::actor_system& sys, const consumer_context& ctx);

} // namespace ferry
