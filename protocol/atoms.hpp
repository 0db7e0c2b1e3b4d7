// The atoms that name ferry's actor messages (at most 10 characters each).
// Must never: reuse an atom for two meanings within one actor interface.
#pragma once

#include <caf/atom.hpp>

namespace ferry {

// The seven rendezvous control calls, served by the owner.
using rv_metadata_atom = caf::atom_constant<caf::atom("rv_meta")>;
using rv_acquire_atom = caf::atom_constant<caf::atom("rv_acquire")>;
using rv_pull_atom = caf::atom_constant<caf::atom("rv_pull")>;
using rv_ref_atom = caf::atom_constant<caf::atom("rv_ref")>;
using rv_detach_atom = caf::atom_constant<caf::atom("rv_detach")>;
using rv_release_atom = caf::atom_constant<caf::atom("rv_release")>;
using rv_lease_renew_atom = caf::atom_constant<caf::atom("rv_renew")>;
// The acquire whose answer carries a small payload (rv_acquire_request::eager_max).
using rv_acquire_eager_atom = caf::atom_constant<caf::atom("rv_acq_egr")>;

// Owner housekeeping.
using register_atom = caf::atom_constant<caf::atom("register")>;
using register_pinned_atom = caf::atom_constant<caf::atom("reg_pinned")>;
using unstage_atom = caf::atom_constant<caf::atom("unstage")>;
using address_to_atom = caf::atom_constant<caf::atom("address_to")>;
using sweep_atom = caf::atom_constant<caf::atom("sweep")>;
using arm_atom = caf::atom_constant<caf::atom("arm")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using stat_atom = caf::atom_constant<caf::atom("stat")>;

// Gateway.
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using add_peer_atom = caf::atom_constant<caf::atom("add_peer")>;
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
// Membership: the endpoints of a node's members (a pull), a member a peer
// learned of (a push), a node's own membership actor hearing of a peer.
using members_atom = caf::atom_constant<caf::atom("members")>;
using member_atom = caf::atom_constant<caf::atom("member")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using peer_joined_atom = caf::atom_constant<caf::atom("peer_join")>;
using probe_atom = caf::atom_constant<caf::atom("tcp_probe")>;
// The gateway tells the owner that a peer node went away.
using peer_down_atom = caf::atom_constant<caf::atom("peer_down")>;

// Consumer side, as seen by local callers.
using get_atom = caf::atom_constant<caf::atom("get")>;
using get_into_atom = caf::atom_constant<caf::atom("get_into")>;
using get_pinned_atom = caf::atom_constant<caf::atom("get_pinned")>;
using metadata_atom = caf::atom_constant<caf::atom("metadata")>;
using ref_atom = caf::atom_constant<caf::atom("ref")>;
using detach_atom = caf::atom_constant<caf::atom("detach")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
// A get whose handle is used once: the consumer releases it when the bytes
// are in (or when it gives up), so the owner frees its copy.
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
// A consumer that finished cleanly, back to the service for the next get.
using consumer_idle_atom = caf::atom_constant<caf::atom("cons_idle")>;

// Messenger, as seen by local callers.
using msg_send_atom = caf::atom_constant<caf::atom("msg_send")>;
using msg_call_atom = caf::atom_constant<caf::atom("msg_call")>;
using msg_stream_atom = caf::atom_constant<caf::atom("msg_stream")>;
using stream_next_atom = caf::atom_constant<caf::atom("strm_next")>;
using stream_cancel_atom = caf::atom_constant<caf::atom("strm_stop")>;
using bind_atom = caf::atom_constant<caf::atom("bind")>;
using unbind_atom = caf::atom_constant<caf::atom("unbind")>;
// A handler actor is asked to handle one message.
using handle_msg_atom = caf::atom_constant<caf::atom("handle_msg")>;
// Function handlers, run by the messenger's handler threads.
using run_atom = caf::atom_constant<caf::atom("run")>;
using open_atom = caf::atom_constant<caf::atom("open")>;
using next_atom = caf::atom_constant<caf::atom("next")>;
// Between messengers.
using wire_send_atom = caf::atom_constant<caf::atom("w_send")>;
using wire_call_atom = caf::atom_constant<caf::atom("w_call")>;
using wire_open_atom = caf::atom_constant<caf::atom("w_open")>;
using wire_item_atom = caf::atom_constant<caf::atom("w_item")>;
using wire_end_atom = caf::atom_constant<caf::atom("w_end")>;
using wire_credit_atom = caf::atom_constant<caf::atom("w_credit")>;
using wire_stop_atom = caf::atom_constant<caf::atom("w_stop")>;

// Between gateways: "I closed my UCX endpoint to you" (the sender's worker
// id); the receiver closes its own endpoint back.
using ucx_goodbye_atom = caf::atom_constant<caf::atom("ucx_bye")>;

// An owner to a consumer node's gateway, which hands it to its UCX engine:
// answer (true) once every GET this node posted to the owner (its worker id)
// before the fence arrived has ended. The owner's quarantine waits on it.
using ucx_fence_atom = caf::atom_constant<caf::atom("ucx_fence")>;

// The control channel (UCX active messages, rdma/control_protocol.hpp):
// a consumer's call through the UCX engine, a one-way one, a peer's call
// the engine hands the owner, and the owner's answer (or error answer) the
// engine sends back; the gateway registers a peer's pair tokens, and tells
// a peer that the channel to it is ready.
using control_call_atom = caf::atom_constant<caf::atom("ctl_call")>;
using control_tell_atom = caf::atom_constant<caf::atom("ctl_tell")>;
using control_answer_atom = caf::atom_constant<caf::atom("ctl_answer")>;
using control_error_atom = caf::atom_constant<caf::atom("ctl_error")>;
using control_peer_atom = caf::atom_constant<caf::atom("ctl_peer")>;
using control_ready_atom = caf::atom_constant<caf::atom("ctl_ready")>;
using control_owner_atom = caf::atom_constant<caf::atom("ctl_owner")>;
// The engine tells the gateway (its watcher) that a peer fell back to CAF
// requests (a send failed), and the gateway tells the peer's gateway.
using control_watcher_atom = caf::atom_constant<caf::atom("ctl_watch")>;
using control_lost_atom = caf::atom_constant<caf::atom("ctl_lost")>;

// A node's stop, first step: its gateway refuses new work.
using stop_work_atom = caf::atom_constant<caf::atom("stop_work")>;

// ferry probe: a node pulls a handle as a consumer and reports the path.
using path_probe_atom = caf::atom_constant<caf::atom("path_probe")>;

// Staging workers (local GPU copies).
using gpu_copy_atom = caf::atom_constant<caf::atom("gpu_copy")>;

// Remote staging (docs/remote-staging.md): a gateway names its node's
// staging source; a session's calls; a requester shard's session request.
using staging_source_atom = caf::atom_constant<caf::atom("st_source")>;
using stage_pin_atom = caf::atom_constant<caf::atom("st_pin")>;
using stage_delegate_atom = caf::atom_constant<caf::atom("st_deleg")>;
using stage_query_atom = caf::atom_constant<caf::atom("st_query")>;
using stage_cross_atom = caf::atom_constant<caf::atom("st_cross")>;
using stage_finish_atom = caf::atom_constant<caf::atom("st_finish")>;
using stage_unpin_atom = caf::atom_constant<caf::atom("st_unpin")>;
using stage_expire_atom = caf::atom_constant<caf::atom("st_expire")>;
using remote_stage_atom = caf::atom_constant<caf::atom("rstage")>;

} // namespace ferry
