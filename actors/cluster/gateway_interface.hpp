// gateway_actor: the typed interface of a node's published front door.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/message.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/atoms.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/peer_hello.hpp"

namespace ferry {

using gateway_actor = caf::typed_actor<
  // A peer introduces itself; the answer is this node's own hello.
  caf::replies_to<hello_atom, peer_hello>::with<peer_hello>,
  // Local: record the hello a peer answered after this node connected out,
  // with the control-channel token this node's own hello offered (0: none).
  caf::replies_to<add_peer_atom, peer_hello, uint64_t>::with<caf::ok_atom>,
  // A peer's gateway: the control channel from this node to it is ready
  // (its engine knows this node's tokens); only the peer itself counts.
  caf::reacts_to<control_ready_atom, uint64_t>,
  // A peer fell back to CAF requests (a control frame failed to send): from
  // this node's UCX engine, naming the peer, or from the peer's gateway,
  // naming the peer itself. The pair's calls take CAF until a new hello.
  caf::reacts_to<control_lost_atom, uint64_t>,
  // Membership (registered peers only): the HOST:PORT of every listening
  // member this node knows, and a member a peer learned of (a push).
  caf::replies_to<members_atom>::with<std::vector<std::string>>,
  caf::reacts_to<member_atom, std::string>,
  // A peer closed its UCX endpoint to this node (the idle reaper): this
  // node closes its own back (only a registered peer naming itself counts).
  caf::reacts_to<ucx_goodbye_atom, uint64_t>,
  // A registered peer's owner (naming its worker id) asks for a fence: the
  // answer comes once every UCX GET this node posted to it before has
  // ended (at once without UCX); its quarantined blocks can then go.
  caf::replies_to<ucx_fence_atom, uint64_t>::with<bool>,
  // The owner actor of a worker id (this node's own or a peer's), and
  // whether that peer is registered on this node's UCX engine.
  caf::replies_to<lookup_atom, uint64_t>::with<caf::actor, bool>,
  // Spawns a registered worker type on this node.
  caf::replies_to<spawn_atom, std::string, caf::message>::with<caf::actor>,
  // Pulls a payload from its owner and stages a copy here; the second
  // argument is a JSON object of options ({"pinned": bool}).
  caf::replies_to<adopt_atom, data_handle, std::string>::with<data_handle>,
  // ferry probe (registered peers only): pulls the handle from its owner as
  // a consumer, detaches, and answers how, as JSON {path, reason, bytes,
  // seconds, checksum}.
  caf::replies_to<path_probe_atom, data_handle>::with<std::string>,
  // Local, the first step of a stop: from now on hellos, spawns, adopts and
  // probes answer errc::draining (work already admitted goes on).
  caf::replies_to<stop_work_atom>::with<caf::ok_atom>,
  // Remote staging: the staging source of the node with this worker id,
  // this node's own, or asked of a registered peer's gateway.
  caf::replies_to<staging_source_atom, uint64_t>::with<caf::actor>,
  // What this node holds and whom it knows, as JSON.
  caf::replies_to<stat_atom>::with<std::string>>;

} // namespace ferry
