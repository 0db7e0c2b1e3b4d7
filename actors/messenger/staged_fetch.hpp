// staged_fetch: the receiver's side of one transparently staged payload.
// One short-lived actor per payload asks the node's consumer service for a
// single-use fetch of the handle (the consumer checks the size the acquire
// states against staged_payload_max before it allocates, and releases the
// handle when done or refused) and ends the fetch at its limit: it answers
// `timeout` and quits, and the consumer, seeing its caller gone, stops the
// transfer and releases what it holds. The messenger decides what a
// timeout means for the message (staging_headers: on_expiry).
//
//   (fetch_atom) -> byte_buffer        once; errors: timeout (the limit),
//                                      payload_too_large (over the limit),
//                                      anything the transfer failed with
// Must never: outlive its fetch, or answer twice.
#pragma once

#include <chrono>
#include <optional>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/rendezvous/consumer_service.hpp"
#include "protocol/data_handle.hpp"

namespace ferry {

struct staged_fetch_params {
  consumer_service_actor consumer;
  data_handle handle;
  // The fetch's limit from when the message left the queue (none: only the
  // transfer's own bounds, `bound`, end it).
  std::optional<std::chrono::milliseconds> limit;
  std::chrono::milliseconds bound{310000}; // the consumer's whole get
};

caf::actor spawn_staged_fetch(caf::actor_system& sys, staged_fetch_params p);

} // namespace ferry
