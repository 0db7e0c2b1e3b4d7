// ucx_control_channel: the UCX engine's side of the control channel (issue
// 23): the rendezvous calls between two nodes as UCX active messages on the
// endpoints the engine keeps, instead of CAF requests. The engine owns one
// and calls it on its own thread only.
// Owns: the inbox of control frames (rdma/ucx_active_message.hpp), the
// rules (rdma/control_protocol.hpp: peers with their pair tokens, the calls
// out with their callers' response promises), which node each peer is (a
// peer's call is answered on behalf of it), and the sends' counts.
// - A consumer's call goes out as a frame; its answer, an error answer, its
//   deadline or its peer going away delivers its promise exactly once.
// - A peer's call goes to the owner actor with the peer's node; the
//   owner's answer comes back (answer()/fail()) and leaves as a frame.
// - A probe (control_op::probe) it answers itself: the gateway's proof that
//   frames go both ways before a pair's calls take the channel.
// - A frame to a peer that UCX failed to send puts the peer back on CAF
//   requests: its later calls answer no_channel (the consumer makes them by
//   CAF), and the watcher (the gateway) hears control_lost, until the
//   peer's next hello pairs the two again.
// Must never: deliver a frame it could not match to a registered peer, or
// block: every send is posted and completes in progress.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>
#include <memory>
#include <string>
#include <string_view>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/node_id.hpp>
#include <caf/response_promise.hpp>

#include "protocol/chunk_bytes.hpp"
#include "protocol/control_frame.hpp"
#include "rdma/control_protocol.hpp"
#include "rdma/ucx_active_message.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry {

struct rdma_metrics;

/// The active-message id control frames travel under.
inline constexpr unsigned control_am_id = 23;

class ucx_control_channel {
public:
  using protocol = control_protocol<caf::response_promise>;
  using clock_type = protocol::clock_type;
  /// The endpoint to a peer, opened when needed; null (with why) if none.
  using endpoint_lookup = std::function<ucp_ep_h(uint64_t peer, std::string& why)>;

  /// The inbox on `worker`; null (logged) when UCX refuses the handler.
  static std::unique_ptr<ucx_control_channel>
  open(const ucx_worker& worker, uint64_t own_worker_id, endpoint_lookup endpoints,
       rdma_metrics* metrics);

  /// Where peers' calls go (the node's owner actor).
  void set_owner(caf::actor owner) { owner_ = std::move(owner); }
  /// Who hears (control_lost_atom, peer) when a send to a peer failed.
  void set_watcher(caf::actor watcher) { watcher_ = std::move(watcher); }
  /// Test hook: every frame that arrives is dropped unread, as where UCX's
  /// port to this node is closed and CAF's is open.
  void drop_arrivals_for_test(bool on) { drop_arrivals_ = on; }
  /// Test hook: after `n` frames (0: never), every send is refused as UCX
  /// refuses one on a broken endpoint.
  void fail_sends_after_for_test(uint64_t n) { fail_sends_after_ = n; }

  /// The peer's gateway says a send of its own failed: the peer fell back
  /// to CAF, and the calls out to it, whose answers may not come, are
  /// answered no_channel (the consumer makes them again by CAF).
  void peer_fell_back(uint64_t peer);
  /// A peer's hello agreed on `tokens`; its calls are made on behalf of
  /// `node`. Our calls carry tokens.out once `confirmed` (see confirm()).
  void add_peer(uint64_t peer, control_pair_tokens tokens, caf::node_id node, bool confirmed);
  /// The peer's engine now takes `token_out`: our calls carry it.
  bool confirm(uint64_t peer, uint64_t token_out) { return protocol_.confirm(peer, token_out); }
  /// The peer went: its calls fail with peer_down, its frames are dropped.
  void remove_peer(uint64_t peer);
  /// At stop: every peer removed, so every call out is answered.
  void close();

  /// A consumer's call (the promise answers it with (chunk_bytes body,
  /// chunk_bytes payload) or an error); a one-way one is sent and forgotten.
  /// False when nothing went out (for a two-way call, its promise says why).
  bool call(uint64_t peer, control_op op, std::string_view body, bool one_way,
            std::chrono::milliseconds timeout, caf::response_promise rp);

  /// The owner's answer to a peer's call, or its error answer. The
  /// answer's last field leaves without a copy: `keep` keeps the bytes that
  /// `body` and `payload` view alive until UCX has sent them.
  void answer(uint64_t peer, uint64_t call_id, control_op op, std::string_view body,
              std::string_view payload, std::shared_ptr<const void> keep);
  void fail(uint64_t peer, uint64_t call_id, control_op op, uint8_t code,
            std::string_view text);

  /// Takes what arrived off the inbox and hands it on; expires calls past
  /// their deadline. True when something happened.
  bool poll(caf::blocking_actor* self);

  /// Peers registered, or calls out: the worker must progress for them.
  bool active() const noexcept { return !nodes_.empty() || protocol_.calls_out() > 0; }
  /// An answer is due soon, or one is on its way: a call of ours is out,
  /// the owner has a peer's call, or a frame is still being sent (a chunk's
  /// rendezvous moves only while this side progresses). The engine then
  /// polls briefly instead of sleeping.
  bool awaiting() const noexcept {
    return protocol_.calls_out() > 0 || !owner_has_.empty() || sending();
  }
  /// Frames still being sent whose count changed lately: a send that has
  /// not completed for stuck_send_after (a peer that died or stopped) does
  /// not keep the engine polling.
  bool sending() const noexcept {
    return sends_->in_flight > 0
           && clock_type::now() - sends_->in_flight_changed < stuck_send_after;
  }
  static constexpr auto stuck_send_after = std::chrono::milliseconds{50};
  /// When the next call expires, if any is out.
  std::optional<clock_type::time_point> next_deadline() const {
    return protocol_.next_deadline();
  }

  /// JSON: peers, fallen_back, calls_out, sent, send_failures,
  /// sends_in_flight, calls_received, answers_received, inbox, dropped
  /// {reason}.
  std::string stat() const;

private:
  ucx_control_channel(std::unique_ptr<ucx_am_inbox> inbox, uint64_t own,
                      endpoint_lookup endpoints, rdma_metrics* metrics);

  /// Posts a frame; false when nothing went out (no endpoint, UCX refused).
  /// `call_id` (0: an answer or a one-way call) fails its call should the
  /// send fail later.
  bool send(uint64_t peer, std::vector<uint8_t> frame, uint64_t call_id);
  /// The same for a frame in parts (an answer), its tail kept by `keep`.
  bool send(uint64_t peer, control_frame_parts frame, std::shared_ptr<const void> keep,
            uint64_t call_id);
  /// Calls whose frames UCX failed to send: answered io_error (the frame
  /// may have reached the owner: the call is not made again by CAF); the
  /// peers they went to fall back to CAF.
  bool fail_unsent();
  /// A registered peer goes back to CAF (counted); false when it is not
  /// registered or already had.
  bool mark_fallen_back(uint64_t peer);
  /// A send to `peer` failed: its calls go by CAF until it pairs again.
  void fall_back(uint64_t peer, const char* why);
  /// Tells the watcher of the peers that fell back since the last time.
  void report_fallbacks(caf::blocking_actor* self);
  /// The owner answered a peer's call: the call the answer's frame names.
  protocol::incoming_call answered(uint64_t peer, uint64_t call_id, control_op op);
  void handle(caf::blocking_actor* self, ucx_am_message msg);

  // Shared with every send out (ucx_active_message.hpp): UCX may complete
  // the last of them when the worker goes, after this channel.
  std::shared_ptr<ucx_am_send_stats> sends_ = std::make_shared<ucx_am_send_stats>();
  std::unique_ptr<ucx_am_inbox> inbox_;
  protocol protocol_;
  endpoint_lookup endpoints_;
  rdma_metrics* metrics_;
  caf::actor owner_;
  caf::actor watcher_;
  std::map<uint64_t, caf::node_id> nodes_; // registered peers
  std::set<uint64_t> fallen_back_;         // of those, the ones back on CAF
  std::vector<uint64_t> to_report_;        // fallen back, the watcher not told yet
  bool drop_arrivals_ = false;
  uint64_t fail_sends_after_ = 0;
  uint64_t calls_received_ = 0;
  // Peers' two-way calls the owner has, by (peer, call id): the token their
  // answers carry (at most max_owner_calls kept; beyond, the peer's own).
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> owner_has_;
  static constexpr size_t max_owner_calls = 4096;
  uint64_t answers_received_ = 0;
};

} // namespace ferry
