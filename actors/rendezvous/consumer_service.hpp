// consumer_service: a node's local entry point for the consumer side of the
// handle API. Worker actors and the blocking client talk to it; it spawns one
// consumer per get and forwards the small calls (metadata, ref, detach,
// release) to the handle's owner with a bounded timeout. It keeps the holds
// of finished gets until they are due (deferred_holds) and drops the one of a
// lease its caller ends first. It owns its consumers: it monitors each, and
// its end stops every one still running, so a node's stop never waits for a
// consumer's requests to time out.
// Must never: be sent across nodes (get_into carries a raw local pointer).
#pragma once

#include <cstdint>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/rendezvous/consumer.hpp"
#include "protocol/atoms.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/data_handle.hpp"

namespace ferry {

using consumer_service_actor = caf::typed_actor<
  // Bytes and the lease id; the caller ends with detach or release.
  caf::replies_to<get_atom, data_handle>::with<byte_buffer, uint64_t>,
  // The bytes of a single-use handle (a transparently staged payload):
  // the handle is released once they are in, or when the get fails.
  caf::replies_to<fetch_atom, data_handle>::with<byte_buffer>,
  // A get that also says how it went: bytes, lease id, the path and the
  // reason of its last path decision (path_metrics labels).
  caf::replies_to<path_probe_atom, data_handle>::with<byte_buffer, uint64_t, std::string,
                                                 std::string>,
  // Bytes written into the caller's buffer and the lease id.
  caf::replies_to<get_into_atom, data_handle, mutable_bytes>::with<uint64_t,
                                                                   uint64_t>,
  // Into the caller's registered block (a pinned writer): zero copy on RDMA.
  caf::replies_to<get_into_atom, data_handle, pinned_ptr>::with<uint64_t,
                                                                uint64_t>,
  // The bytes in a registered pool block, the same type on both paths.
  // (block, bytes in it, lease id)
  caf::replies_to<get_pinned_atom, data_handle>::with<pinned_ptr, uint64_t,
                                                      uint64_t>,
  // A registered block of at least `bytes` to pass to get_into (a pinned
  // writer). Errors: budget_exhausted, pool_exhausted (or no UCX).
  caf::replies_to<pool_alloc_atom, uint64_t>::with<pinned_ptr>,
  // total_len, refcount, pinned. Takes no lock.
  caf::replies_to<metadata_atom, data_handle>::with<uint64_t, uint64_t, bool>,
  // The refcount after adding one reference.
  caf::replies_to<ref_atom, data_handle>::with<uint64_t>,
  caf::replies_to<detach_atom, data_handle, uint64_t>::with<caf::ok_atom>,
  // The refcount left and whether the owner freed the slot.
  caf::replies_to<release_atom, data_handle, uint64_t>::with<uint64_t, bool>,
  // From a consumer that finished a get cleanly: keep it for the next one.
  caf::reacts_to<consumer_idle_atom, caf::actor>,
  // The same after a GET, with the hold it leaves to the service
  // (actors/rendezvous/deferred_holds.hpp): (consumer, handle, lease id, owner,
  // within_ms).
  caf::reacts_to<consumer_idle_atom, caf::actor, data_handle, uint64_t, caf::actor,
                 uint64_t>,
  // Sends the deferred holds that are due.
  caf::reacts_to<tick_atom>>;

consumer_service_actor spawn_consumer_service(caf::actor_system& sys,
                                              consumer_context ctx);

} // namespace ferry
