// ucx_engine: the node's one UCX worker and the dedicated thread that owns
// it (a blocking actor). It keeps the endpoints to peers (by worker id, from
// their hello), runs GETs and replies when each completes, and keeps the
// worker progressing while this node's own descriptors are out (an emulated
// GET over tcp needs the target to progress). Idle, it sleeps on its mailbox;
// busy, on the worker's event fd (ucp_worker_arm), woken by UCX or by a
// sender's signal. A GET of its own is polled closely while UCX moves it
// (shared-memory transports raise no event per fragment) and, once nothing
// moved for a short while, in sleeping waits: it never spins on a GET that
// does not move.
//
// Every GET has a deadline. One that passes it, or whose peer went away
// (UCX 1.13 in `none` error mode never fails such a GET, and cannot cancel
// it), is answered get_failed and moves to the abandoned list, polled
// slowly and counted in ferry_ucx_abandoned_gets; its destination stays
// held until UCX finishes it or the worker goes. A peer that goes has its
// endpoint closed once no abandoned GET uses it.
//
// A GET holds its destination block until UCX reports completion, so a
// caller that gave up never frees granules the NIC may still write.
//
// It also owns the consumer side's warm state across GETs: the cache of
// unpacked remote keys (rdma/rkey_cache.hpp; reused when a descriptor names
// the same peer, registration generation and packed key, dropped when the
// peer's endpoint is replaced or the peer is forgotten), and the expiry of
// the one warm destination block that consumers share through the ref
// (rdma/warm_destination.hpp).
//
// Endpoint lifecycle: endpoints open at a peer's first GET (or at its hello,
// eager), close when the peer leaves, when the idle reaper finds them unused
// (after a goodbye to the peer), when the peer says goodbye, and at stop;
// each close is counted by reason (ferry_ucx_endpoints_closed_total). None
// closes with a GET of ours on it, and the idle reaper closes none while
// this node's descriptors are out (a peer's GET from us may ride the pair
// UCX shares between our endpoint and its).
// Must never: be called from any thread but its own (except signal()).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/rdma/rdma_types.hpp"
#include "rdma/rkey_cache.hpp"
#include "rdma/warm_destination.hpp"

struct ucp_worker;

namespace ferry {

class ucx_context;

/// Fault hooks for tests (honoured only in FERRY_TEST_HOOKS builds).
struct ucx_engine_faults {
  bool fail_gets = false;                    // every GET fails
  std::chrono::milliseconds get_delay{0};    // hold each completion this long
  bool no_progress = false; // never progress for our descriptors: peers'
                            // emulated GETs (tcp) from this node hang
  // Progress for our descriptors only this long after the last new one
  // went out: a peer's emulated GET waits that long (and gives up first
  // when its own bound is shorter), then is served.
  std::chrono::milliseconds serve_delay{0};
  // Every control frame that arrives is dropped unread (UCX's port to this
  // node closed, CAF's open): the peers' probes get no answer.
  bool drop_control_frames = false;
  // After this many control frames (0: never), every send is refused.
  uint64_t fail_control_sends_after = 0;
};

/// The engine answers a control-channel call by its deadline; a request to
/// it waits this much longer, so the engine's answer (or timeout) decides.
inline constexpr std::chrono::milliseconds channel_call_margin{1000};

struct rdma_metrics;

/// A handle to the engine: the actor plus the worker to signal, so a message
/// wakes an engine sleeping on the event fd.
class ucx_engine_ref {
public:
  ucx_engine_ref() = default;
  ucx_engine_ref(caf::actor engine, std::shared_ptr<ucp_worker> worker,
                 std::shared_ptr<warm_destination> warm = nullptr)
    : engine_(std::move(engine)), worker_(std::move(worker)), warm_(std::move(warm)) {}

  explicit operator bool() const { return static_cast<bool>(engine_); }
  const caf::actor& actor() const { return engine_; }

  /// Wakes the engine (thread-safe); call after sending it a message.
  void wake() const;

  /// The node's warm GET destination (thread-safe), or null.
  warm_destination* warm() const { return warm_.get(); }

  /// Whether the engine serves the control channel (its handler is set).
  bool control_channel() const noexcept { return control_; }
  void set_control_channel(bool on) noexcept { control_ = on; }

private:
  caf::actor engine_;
  std::shared_ptr<ucp_worker> worker_;
  std::shared_ptr<warm_destination> warm_;
  bool control_ = false;
};

/// Forget a peer (it went down): drop its cached remote keys, and with them
/// the mappings of its memory that their unpack made.
using ucx_forget_atom = caf::atom_constant<caf::atom("ucx_forget")>;

/// Messages the engine handles:
///   (ucx_peer_atom, uint64_t worker_id, std::vector<char> address,
///    caf::actor gateway, bool failure_reports)  a peer's hello: its
///     address, its gateway (a goodbye goes there), and whether endpoints to
///     it run with UCX failure reports (failure_reports_choice.hpp); with
///     eager_endpoints the endpoint is created now and progressed until
///     wired up (bounded)
///   (ucx_goodbye_atom, uint64_t worker_id)  the peer closed its endpoint to
///     us: ours closes too once nothing runs on it
///   (ucx_hold_atom, int64_t delta)        descriptors out on this node (and
///     blocks in the owner's quarantine: peers' GETs of them are served)
///   (ucx_fence_atom, uint64_t worker_id) -> bool  (from the gateway, for
///     that peer's owner) true once every GET we posted to it so far ended
///     (get_fences.hpp); timeout after 10 s
///   (ucx_retire_atom, std::vector<uint64_t> peers, pinned_ptr block)  the
///     owner forced a quarantined block out: our endpoints to those peers
///     close (after a goodbye), then the block goes
///   (ucx_get_atom, uint64_t worker_id, uint64_t generation, uint64_t addr,
///    uint64_t len, std::vector<uint8_t> rkey, pinned_ptr dest)
///     -> (uint64_t nanoseconds)  or errc::get_failed
///     the key comes from the rkey cache when (worker_id, generation, rkey)
///     is there, else it is unpacked and cached
///   (ucx_get_atom, uint64_t worker_id, uint64_t addr, uint64_t len,
///    std::vector<uint8_t> rkey, pinned_ptr dest)
///     the same without a generation: unpacked for this GET alone
///   (ucx_forget_atom, uint64_t worker_id)  the peer went: drop its cached
///     keys, abandon its GETs, close its endpoint
///   (control_owner_atom, caf::actor owner)  where peers' control-channel
///     calls go
///   (control_watcher_atom, caf::actor gateway)  who hears
///     (control_lost_atom, uint64_t worker_id): a send to the peer failed,
///     its calls answer no_channel until it pairs again
///   (control_lost_atom, uint64_t worker_id)  the peer's gateway says a send
///     of its own failed: the same, and the calls out to it answer
///     no_channel (made again by CAF)
///   (control_peer_atom, uint64_t worker_id, uint64_t token_out,
///    uint64_t token_in, caf::node_id node, bool confirmed) -> bool  a
///     peer's pair tokens (a hello); our calls carry token_out once
///     confirmed; false when the channel is off here
///   (control_ready_atom, uint64_t worker_id, uint64_t token_out) -> bool
///     the peer takes token_out now (its ctl_ready)
///   (control_call_atom, uint64_t worker_id, uint8_t op, std::string body,
///    uint64_t timeout_ms) -> (chunk_bytes body, chunk_bytes payload)  a
///     call to the peer's owner over the channel (errors: the owner's,
///     request_timeout, peer_down, io_error, no_channel: nothing was sent);
///     op probe: the peer's engine answers (empty) itself
///   (control_tell_atom, uint64_t worker_id, uint8_t op, std::string body,
///    caf::actor owner, caf::message by_caf)  a one-way call; where the
///     channel sends nothing (the peer fell back), by_caf goes to owner
///   (control_answer_atom, ...), (control_error_atom, ...)  the owner's
///     answer to a peer's call (actors/rendezvous/owner_interface.hpp)
///   (stat_atom) -> std::string  JSON: control_channel (null when off), rkey_cache {hits, unpacks, evictions,
///     invalidations, entries, bytes}, warm_destination {kept, reused,
///     dropped, held_bytes}, gets_in_flight, gets_abandoned, abandoned_bytes
///     (their destinations' registered bytes), endpoints
///     {open, created, eager_wireups, wireups_pending, idle_timeout_ms,
///     closed {idle, peer_down, goodbye, shutdown, quarantine}}, fences_waiting
struct ucx_engine_start {
  std::shared_ptr<const ucx_context> context;
  ucx_engine_faults faults;
  rkey_cache_config rkey_cache;
  bool rkey_cache_enabled = true;
  warm_destination_config warm;
  // The longest one GET may run before it is answered get_failed and
  // abandoned (the consumer then falls back to chunks).
  std::chrono::milliseconds get_timeout{300000};
  rdma_metrics* metrics = nullptr; // ferry_ucx_abandoned_gets (may be null)
  uint64_t worker_id = 0; // this node's: a goodbye names it
  // The idle reaper (rdma/endpoint_activity.hpp): off when empty, floor
  // 500 ms. An endpoint closed idle is preceded by a goodbye to the peer.
  std::optional<std::chrono::milliseconds> ep_idle_timeout;
  // Wire up at the peer's hello instead of at its first GET.
  bool eager_endpoints = false;
  // Serve the control channel (rdma/control_protocol.hpp): rendezvous calls
  // to and from peers registered with their pair tokens as active messages.
  bool control_channel = false;

  /// Every GET unpacks its key and no destination is kept.
  void disable_warm_state() {
    rkey_cache_enabled = false;
    warm.max_bytes = 0;
    warm.small_max_bytes = 0;
  }
};
// The node turns both off when FERRY_RDMA_WARM_DISABLE is set (see
// runtime/node.cpp): every GET unpacks its key, no destination is kept.

/// Creates the worker and spawns the engine; empty on failure (logged).
ucx_engine_ref spawn_ucx_engine(caf::actor_system& sys, ucx_engine_start start,
                                std::vector<char>& worker_address);

} // namespace ferry
