#include "actors/rdma/ucx_control_channel.hpp"

#include <algorithm>
#include <random>

#include <caf/blocking_actor.hpp>
#include <caf/sec.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <spdlog/spdlog.h>

#include "actors/rdma/rdma_metrics.hpp"
#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

/// Call ids start at a random value per process: a restarted node never
/// matches a late answer meant for its former self.
uint64_t random_first_call_id() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id == 0 ? 1 : id;
}

} // namespace

std::unique_ptr<ucx_control_channel>
ucx_control_channel::open(const ucx_worker& worker, uint64_t own_worker_id,
                          endpoint_lookup endpoints, rdma_metrics* metrics) {
  auto inbox = ucx_am_inbox::listen(worker, control_am_id);
  if (!inbox) {
    spdlog::warn("control channel: no active-message handler: {}", inbox.error_message());
    return nullptr;
  }
  return std::unique_ptr<ucx_control_channel>{
    new ucx_control_channel(std::move(*inbox), own_worker_id, std::move(endpoints), metrics)};
}

ucx_control_channel::ucx_control_channel(std::unique_ptr<ucx_am_inbox> inbox, uint64_t own,
                                         endpoint_lookup endpoints, rdma_metrics* metrics)
  : inbox_(std::move(inbox)),
    protocol_(own, random_first_call_id()),
    endpoints_(std::move(endpoints)),
    metrics_(metrics) {}

void ucx_control_channel::add_peer(uint64_t peer, control_pair_tokens tokens,
                                   caf::node_id node, bool confirmed) {
  protocol_.add_peer(peer, tokens, confirmed);
  nodes_[peer] = std::move(node);
  fallen_back_.erase(peer); // paired again (the gateway probes before use)
  to_report_.erase(std::remove(to_report_.begin(), to_report_.end(), peer), to_report_.end());
}

void ucx_control_channel::remove_peer(uint64_t peer) {
  if (nodes_.erase(peer) == 0)
    return;
  fallen_back_.erase(peer);
  for (auto i = owner_has_.begin(); i != owner_has_.end();)
    i = i->first.first == peer ? owner_has_.erase(i) : std::next(i);
  for (auto& c : protocol_.remove_peer(peer))
    c.waiter.deliver(make_error(errc::peer_down, "the peer went away"));
}

void ucx_control_channel::close() {
  std::vector<uint64_t> peers;
  for (const auto& [peer, node] : nodes_)
    peers.push_back(peer);
  for (auto peer : peers)
    remove_peer(peer);
}

bool ucx_control_channel::send(uint64_t peer, std::vector<uint8_t> frame,
                               uint64_t call_id) {
  return send(peer, control_frame_parts{std::move(frame), {}}, nullptr, call_id);
}

bool ucx_control_channel::send(uint64_t peer, control_frame_parts frame,
                               std::shared_ptr<const void> keep, uint64_t call_id) {
  if (fail_sends_after_ > 0 && sends_->posted >= fail_sends_after_) {
    ++sends_->failed;
    fall_back(peer, "UCX refused a send (a test hook)");
    return false;
  }
  std::string why;
  auto ep = endpoints_(peer, why);
  if (ep == nullptr) {
    ++sends_->failed;
    spdlog::debug("control channel: no endpoint to worker {:016x}: {}", peer, why);
    fall_back(peer, "no endpoint");
    return false;
  }
  // Eager only: a frame's receiver never reads this process's memory, so
  // this node's death mid-frame cannot abort the peer (rdma/
  // ucx_active_message.hpp, am_protocol).
  if (auto st = post_am(ep, control_am_id, std::move(frame.head),
                        am_tail{frame.tail, std::move(keep)}, false, sends_, call_id, peer,
                        am_protocol::eager_only);
      !st) {
    spdlog::debug("control channel: send to worker {:016x}: {}", peer, st.error_message());
    fall_back(peer, "UCX refused a send");
    return false;
  }
  return true;
}

bool ucx_control_channel::mark_fallen_back(uint64_t peer) {
  if (nodes_.count(peer) == 0 || !fallen_back_.insert(peer).second)
    return false;
  if (metrics_ && metrics_->control_fallbacks)
    metrics_->control_fallbacks->Increment();
  return true;
}

void ucx_control_channel::fall_back(uint64_t peer, const char* why) {
  if (!mark_fallen_back(peer))
    return;
  spdlog::warn("control channel to peer {:016x}: {}; its rendezvous calls go by CAF "
               "requests until it pairs again",
               peer, why);
  to_report_.push_back(peer);
}

void ucx_control_channel::peer_fell_back(uint64_t peer) {
  if (nodes_.count(peer) == 0)
    return;
  mark_fallen_back(peer); // (or already)
  for (auto& c : protocol_.take_calls_to(peer))
    c.waiter.deliver(make_error(errc::no_channel, "control channel: the peer fell back to "
                                                  "CAF requests; the call goes that way"));
}

void ucx_control_channel::report_fallbacks(caf::blocking_actor* self) {
  if (to_report_.empty())
    return;
  if (watcher_)
    for (auto peer : to_report_)
      self->send(watcher_, control_lost_atom::value, peer);
  to_report_.clear();
}

bool ucx_control_channel::fail_unsent() {
  if (sends_->failed_sends.empty())
    return false;
  auto failed = std::move(sends_->failed_sends);
  sends_->failed_sends.clear();
  for (const auto& f : failed) {
    fall_back(f.to, "UCX failed a send");
    if (f.tag == 0)
      continue; // an answer or a one-way call: nobody here waits on it
    if (auto c = protocol_.cancel(f.tag))
      c->waiter.deliver(make_error(errc::io_error, "the control frame to the peer was not sent"));
  }
  return true;
}

bool ucx_control_channel::call(uint64_t peer, control_op op, std::string_view body,
                               bool one_way, std::chrono::milliseconds timeout,
                               caf::response_promise rp) {
  if (fallen_back_.count(peer) > 0) { // back on CAF until it pairs again
    if (rp.pending())
      rp.deliver(make_error(errc::no_channel, "control channel: the peer fell back to CAF"));
    return false;
  }
  auto deadline = clock_type::now() + timeout;
  // A one-way call's promise is answered at once: nothing waits on it.
  auto made = protocol_.call_peer(peer, op, body, one_way, deadline,
                                  one_way ? caf::response_promise{} : rp);
  if (auto* refused = std::get_if<control_call_refusal>(&made)) {
    // Nothing went out: an unknown peer or a full table sends the call by
    // CAF instead (errc::no_channel); a body over the bound is the caller's.
    auto code = *refused == control_call_refusal::body_too_long ? errc::payload_too_large
                                                                : errc::no_channel;
    if (rp.pending())
      rp.deliver(make_error(code, std::string{"control channel: "} + to_string(*refused)));
    return false;
  }
  auto& out = std::get<protocol::outgoing>(made);
  if (!send(peer, std::move(out.frame), one_way ? 0 : out.call_id)) {
    if (one_way)
      return false;
    if (auto c = protocol_.cancel(out.call_id)) // nothing went out: by CAF instead
      c->waiter.deliver(make_error(errc::no_channel, "control channel: the frame was not sent"));
    return false;
  }
  if (one_way && rp.pending())
    rp.deliver(chunk_bytes{}, chunk_bytes{});
  return true;
}

ucx_control_channel::protocol::incoming_call
ucx_control_channel::answered(uint64_t peer, uint64_t call_id, control_op op) {
  protocol::incoming_call c;
  c.peer = peer;
  c.call_id = call_id;
  c.op = op;
  if (auto i = owner_has_.find({peer, call_id}); i != owner_has_.end()) {
    c.reply_token = i->second;
    owner_has_.erase(i);
  }
  return c;
}

void ucx_control_channel::answer(uint64_t peer, uint64_t call_id, control_op op,
                                 std::string_view body, std::string_view payload,
                                 std::shared_ptr<const void> keep) {
  auto c = answered(peer, call_id, op);
  if (auto parts = protocol_.answer_parts(c, body, payload)) {
    send(peer, std::move(*parts), std::move(keep), 0);
    return;
  }
  // A peer gone since, or an answer over the frame's bounds.
  if (auto frame = protocol_.error_frame(c, static_cast<uint8_t>(errc::payload_too_large),
                                         "the answer does not fit a control frame"))
    send(peer, std::move(*frame), 0);
}

void ucx_control_channel::fail(uint64_t peer, uint64_t call_id, control_op op, uint8_t code,
                               std::string_view text) {
  auto c = answered(peer, call_id, op);
  if (auto frame = protocol_.error_frame(c, code, text))
    send(peer, std::move(*frame), 0);
}

void ucx_control_channel::handle(caf::blocking_actor* self, ucx_am_message msg) {
  // Any code a newer peer may answer (ours end at errc_last): an unknown
  // one still ends its call.
  auto got = protocol_.receive(std::move(msg.bytes), 255);
  if (auto* d = std::get_if<protocol::dropped>(&got)) {
    if (metrics_ && metrics_->control_dropped[static_cast<size_t>(d->why)])
      metrics_->control_dropped[static_cast<size_t>(d->why)]->Increment();
    spdlog::debug("control channel: frame dropped ({})", to_string(d->why));
    return;
  }
  if (auto* c = std::get_if<protocol::incoming_call>(&got)) {
    if (c->op == control_op::probe) { // answered here: frames reach us, ours go back
      if (!c->one_way)
        if (auto frame = protocol_.answer_frame(*c, {}, {}))
          send(c->peer, std::move(*frame), 0);
      return; // not an owner's call: not counted in calls_received
    }
    ++calls_received_;
    auto node = nodes_.find(c->peer);
    if (!owner_ || node == nodes_.end())
      return; // registered in the protocol means registered here
    if (!c->one_way && owner_has_.size() < max_owner_calls)
      owner_has_[{c->peer, c->call_id}] = c->reply_token;
    self->send(owner_, control_call_atom::value, c->peer, c->call_id,
               static_cast<uint8_t>(c->op), c->one_way, node->second,
               std::string{c->body()});
    return;
  }
  auto& a = std::get<protocol::answer>(got);
  ++answers_received_;
  auto& rp = a.completed.waiter;
  if (a.failed) {
    rp.deliver(make_error(static_cast<errc>(a.error_code), std::string{a.body()}));
    return;
  }
  // The bytes stay in the message: body and payload are views into it.
  auto keep = std::make_shared<control_message>(std::move(a.message));
  auto body = keep->body();
  auto payload = keep->payload();
  rp.deliver(chunk_bytes::view(keep, body.data(), body.size()),
             chunk_bytes::view(keep, payload.data(), payload.size()));
}

bool ucx_control_channel::poll(caf::blocking_actor* self) {
  bool any = false;
  while (auto msg = inbox_->next()) {
    if (!drop_arrivals_)
      handle(self, std::move(*msg));
    any = true;
  }
  if (fail_unsent())
    any = true;
  report_fallbacks(self);
  for (auto& c : protocol_.expire(clock_type::now())) {
    c.waiter.deliver(caf::make_error(caf::sec::request_timeout));
    any = true;
  }
  return any;
}

std::string ucx_control_channel::stat() const {
  nlohmann::json dropped = nlohmann::json::object();
  for (size_t i = 0; i < control_drop_reasons; ++i) {
    auto why = static_cast<control_drop>(i);
    dropped[to_string(why)] = protocol_.dropped_count(why);
  }
  const auto& in = inbox_->stats();
  return nlohmann::json{{"peers", nodes_.size()},
                        {"fallen_back", fallen_back_.size()},
                        {"calls_out", protocol_.calls_out()},
                        {"sent", sends_->posted},
                        {"send_failures", sends_->failed},
                        {"sends_in_flight", sends_->in_flight},
                        {"calls_received", calls_received_},
                        {"answers_received", answers_received_},
                        {"inbox",
                         {{"received", in.received},
                          {"held", in.held},
                          {"held_now", inbox_->held_now()},
                          {"too_large", in.too_large},
                          {"queue_full", in.queue_full},
                          {"failed", in.failed}}},
                        {"dropped", dropped}}
    .dump();
}

} // namespace ferry
