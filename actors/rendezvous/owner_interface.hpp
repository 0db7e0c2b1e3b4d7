// owner_actor: the typed interface of a node's owner. The seven rendezvous
// calls take and answer JSON bodies (protocol/rv_messages.hpp), so skewed
// versions of ferry talk; _rv_pull answers raw chunk bytes (chunk_bytes: a
// view of the staged payload, serialized without a copy in the owner).
#pragma once

#include <cstdint>
#include <string>

#include <caf/node_id.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/rdma/rdma_types.hpp"
#include "protocol/atoms.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/data_handle.hpp"

namespace ferry {

using owner_actor = caf::typed_actor<
  caf::replies_to<rv_metadata_atom, std::string>::with<std::string>,
  caf::replies_to<rv_acquire_atom, std::string>::with<std::string>,
  // The eager acquire: the same answer, and with it the payload itself when
  // it is at most the asked eager_max (and this owner's); else no bytes.
  caf::replies_to<rv_acquire_eager_atom, std::string>::with<std::string, chunk_bytes>,
  caf::replies_to<rv_pull_atom, std::string>::with<chunk_bytes>,
  caf::replies_to<rv_ref_atom, std::string>::with<std::string>,
  caf::replies_to<rv_detach_atom, std::string>::with<std::string>,
  caf::replies_to<rv_release_atom, std::string>::with<std::string>,
  caf::replies_to<rv_lease_renew_atom, std::string>::with<std::string>,
  // A call that came over the control channel, from this node's UCX engine:
  // (peer worker id, call id, control_op, one-way, the peer's node, body).
  // The answer goes back to the engine as control_answer_atom (JSON, bytes)
  // or control_error_atom (code, text); none to a one-way call.
  caf::reacts_to<control_call_atom, uint64_t, uint64_t, uint8_t, bool, caf::node_id,
                 std::string>,
  // Stages bytes; the second argument is a time-to-live in ms (0: none).
  caf::replies_to<register_atom, byte_buffer, uint64_t>::with<data_handle>,
  // Stages bytes in registered memory (one copy) when it can, else in plain
  // memory with the reason counted; never fails.
  caf::replies_to<register_pinned_atom, byte_buffer, uint64_t>::with<data_handle>,
  // The same with `may_map`: false uses arenas already mapped only (the
  // messenger's transparent staging: a send never maps an arena), and
  // registers a payload of owner_config::register_in_place_min or more
  // where it lies, with no copy (it is unregistered when its slot goes).
  caf::replies_to<register_pinned_atom, byte_buffer, uint64_t, bool>::with<data_handle>,
  // Stages [offset, offset + len) of a registered external region with no
  // copy: (region, offset, len, ttl_ms). Errors: errc::invalid_argument for
  // a range outside the region, errc::draining while it is unregistered.
  caf::replies_to<region_stage_atom, external_region_ptr, uint64_t, uint64_t,
                  uint64_t>::with<data_handle>,
  // Local only (from this node's messenger): the stager drops its own
  // reference to a payload nobody will fetch; answers whether it was freed.
  caf::replies_to<unstage_atom, data_handle>::with<bool>,
  // Local only (from this node's messenger): the payload was staged for
  // the node of this actor alone; when that node goes away, the stager's
  // reference goes with it (not at its time-to-live).
  caf::reacts_to<address_to_atom, data_handle, caf::actor>,
  // The shutdown drain: stop answering RDMA, copy pinned (arena) slots to
  // plain memory; answers how many were copied.
  caf::replies_to<drain_atom>::with<uint64_t>,
  // The gateway saw this node go away: its leases and transfers end.
  caf::reacts_to<peer_down_atom, caf::node_id>,
  // The lease reaper's tick: answers whether deadlines remain.
  caf::replies_to<sweep_atom>::with<bool>,
  // Its own tick while it drains (the reaper is gone then): tends the
  // quarantine until it is empty.
  caf::reacts_to<tick_atom>,
  // What the owner holds, as JSON.
  caf::replies_to<stat_atom>::with<std::string>>;

} // namespace ferry
