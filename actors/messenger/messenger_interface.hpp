// messenger_actor: the typed interface of a node's messenger (named handlers
// across nodes). Local actors talk to their node's messenger; messengers
// talk to each other with the wire_* messages. `node` is a worker id: this
// node's own, or a peer's it is connected to.
#pragma once

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/messenger/messenger_handlers.hpp"
#include "protocol/atoms.hpp"
#include "protocol/messenger_wire.hpp"

namespace ferry {

using messenger_actor = caf::typed_actor<
  // -- local callers ------------------------------------------------------------
  // Fire-and-forget: answers once the message is on its way (staged first
  // when its payload is above the threshold). Nothing comes back from the
  // handler; a payload the receiver cannot take is dropped there and logged.
  caf::replies_to<msg_send_atom, uint64_t, messenger::envelope>::with<caf::ok_atom>,
  // A unary call: the handler's reply. timeout_ms 0: no timeout of the
  // caller's own (the node's transfer timeout still bounds it).
  caf::replies_to<msg_call_atom, uint64_t, messenger::envelope, uint64_t>::with<
    messenger::envelope>,
  // Opens a stream from a stream handler; answers the stream's id.
  caf::replies_to<msg_stream_atom, uint64_t, messenger::envelope>::with<uint64_t>,
  // The stream's next item: (true, item), or (false, {}) at its end; an
  // error (errc::stream_ended, peer_down, ...) ends it.
  caf::replies_to<stream_next_atom, uint64_t>::with<bool, messenger::envelope>,
  // The caller is done with a stream before its end: the producer stops.
  caf::reacts_to<stream_cancel_atom, uint64_t>,
  // Binds a name on this node (an actor, or a function its handler
  // threads run). Errors: invalid_argument (a taken or bad name).
  caf::replies_to<bind_atom, std::string, caf::actor>::with<caf::ok_atom>,
  caf::replies_to<bind_atom, std::string, messenger::unary_function_ptr>::with<
    caf::ok_atom>,
  caf::replies_to<bind_atom, std::string, messenger::stream_function_ptr>::with<
    caf::ok_atom>,
  caf::replies_to<unbind_atom, std::string>::with<bool>,
  // From this node's gateway: the node went away, or its hello said it had
  // lost this node (its side ended everything): calls to it and streams
  // with it fail now. Ignored from any other node.
  caf::reacts_to<peer_down_atom, caf::node_id>,
  // -- peers' messengers ----------------------------------------------------------
  caf::reacts_to<wire_send_atom, messenger::envelope>,
  caf::replies_to<wire_call_atom, messenger::envelope>::with<messenger::envelope>,
  // (request, the caller's stream id, window) -> the producer's stream id
  caf::replies_to<wire_open_atom, messenger::envelope, uint64_t, uint32_t>::with<
    uint64_t>,
  // To the caller: an item of its stream, or its end (an error text, empty
  // at a clean end).
  caf::reacts_to<wire_item_atom, uint64_t, messenger::envelope>,
  caf::reacts_to<wire_end_atom, uint64_t, std::string>,
  // To the producer: room for n more items; stop (with why).
  caf::reacts_to<wire_credit_atom, uint64_t, uint32_t>,
  caf::reacts_to<wire_stop_atom, uint64_t, std::string>>;

} // namespace ferry
