#include "actors/cluster/gateway.hpp"

#include <map>
#include <set>
#include <algorithm>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>

#include "actors/cluster/lost_peers.hpp"
#include "actors/cluster/probe_runner.hpp"
#include "actors/messenger/messenger_interface.hpp"
#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rdma/ucx_engine.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/control_frame.hpp"
#include "rdma/control_channel_choice.hpp"
#include "rdma/failure_reports_choice.hpp"
#include "rdma/one_sided_reads.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

struct gateway_state {
  gateway_params params;
  std::map<uint64_t, peer_hello> peers;
  std::set<uint64_t> ucx_peers; // registered on the UCX engine
  // The control channel: peers whose tokens the engine has (their frames
  // are accepted), and of those the ones whose calls go by it (both
  // engines know the pair's tokens).
  std::set<uint64_t> control_peers;
  std::set<uint64_t> control_ready;
  // A peer's token from its hello, which our frames carry only once it says
  // ctl_ready (its engine knows it then): sent earlier, they would be dropped.
  std::map<uint64_t, uint64_t> pending_token_out;
  // Each peer's pairing, a fresh number at each of its hellos and when the
  // channel to it is lost: a probe's answer counts only for the pairing it
  // was sent in. Never reused (one counter for all peers, only going up).
  std::map<uint64_t, uint64_t> pairing;
  uint64_t last_pairing = 0;
  bool stopping = false;        // the node's stop began: no new work
  // Shared with the exit functor, which may run after the state is gone.
  std::shared_ptr<std::vector<caf::actor>> workers
    = std::make_shared<std::vector<caf::actor>>();
  static inline const char* name = "ferry.gateway";
};

using gateway_ptr = gateway_actor::stateful_pointer<gateway_state>;

peer_hello own_hello(gateway_ptr self) {
  auto h = self->state.params.identity;
  h.port = self->state.params.port->load();
  h.gateway = caf::actor_cast<caf::actor>(self);
  h.owner = caf::actor_cast<caf::actor>(self->state.params.node->owner);
  h.messenger = self->state.params.node->messenger;
  return h;
}

/// True for this node and for the node of a registered peer.
bool is_registered(gateway_ptr self, const caf::strong_actor_ptr& sender) {
  if (!sender)
    return false; // anonymous: nobody to check
  const auto& n = sender->node();
  if (n == self->node())
    return true;
  for (const auto& [wid, p] : self->state.peers)
    if (p.gateway.node() == n)
      return true;
  return false;
}

/// The registered peer `worker_id` when the message being handled comes from
/// its node; null otherwise: a peer speaks for itself only.
const peer_hello* sent_by_peer(gateway_ptr self, uint64_t worker_id) {
  auto sender = self->current_sender();
  auto i = self->state.peers.find(worker_id);
  if (!sender || i == self->state.peers.end() || i->second.gateway.node() != sender->node())
    return nullptr;
  return &i->second;
}

/// Refuses new work once the node's stop began.
caf::error refuse_if_stopping(gateway_ptr self, const char* what) {
  if (!self->state.stopping)
    return caf::none;
  return make_error(errc::draining,
                    std::string{what} + ": the node is shutting down");
}

/// A new listening member: the membership actor hears of it, and every
/// other listening member is told, so that it dials the newcomer.
void announce(gateway_ptr self, const peer_hello& peer) {
  if (peer.port == 0)
    return; // a client: nobody dials it
  auto ep = endpoint_text(peer.host, peer.port);
  if (auto& m = self->state.params.membership)
    caf::anon_send(m, peer_joined_atom::value, peer.worker_id, ep);
  for (const auto& [wid, other] : self->state.peers)
    if (wid != peer.worker_id && other.port != 0)
      self->send(caf::actor_cast<gateway_actor>(other.gateway), member_atom::value, ep);
}

/// ferry_control_channel{channel}: how many peers each channel serves.
void update_channel_gauge(gateway_ptr self) {
  auto* m = self->state.params.metrics;
  if (!m)
    return;
  auto am = self->state.control_ready.size();
  auto all = self->state.peers.size();
  m->control_peers[static_cast<int>(control_channel::ucx_am)]->Set(static_cast<double>(am));
  m->control_peers[static_cast<int>(control_channel::caf)]->Set(
    static_cast<double>(all > am ? all - am : 0));
}

/// Whether this node's engine serves the control channel.
bool serves_channel(gateway_ptr self) {
  const auto& engine = self->state.params.engine;
  return engine && engine.control_channel();
}

/// The peer's calls go by the control channel from now on.
void control_is_ready(gateway_ptr self, uint64_t worker_id) {
  self->state.control_ready.insert(worker_id);
  if (auto& dir = self->state.params.directory)
    dir->set_control_am(worker_id, true);
  spdlog::debug("peer {:016x}: rendezvous calls over UCX active messages", worker_id);
  update_channel_gauge(self);
}

/// A new pairing with the peer: probes sent before it no longer count.
uint64_t new_pairing(gateway_ptr self, uint64_t worker_id) {
  return self->state.pairing[worker_id] = ++self->state.last_pairing;
}

/// True while `pairing` is the registered peer's latest.
bool is_current(gateway_ptr self, uint64_t worker_id, uint64_t pairing) {
  auto i = self->state.pairing.find(worker_id);
  return i != self->state.pairing.end() && i->second == pairing
         && self->state.peers.count(worker_id) > 0;
}

/// The peer's calls leave the channel for CAF requests (a send to it
/// failed, here or there), and a probe still out for it no longer counts.
void control_is_lost(gateway_ptr self, uint64_t worker_id) {
  new_pairing(self, worker_id);
  if (self->state.control_ready.erase(worker_id) == 0)
    return;
  if (auto& dir = self->state.params.directory)
    dir->set_control_am(worker_id, false);
  spdlog::warn("peer {:016x}: rendezvous calls back on CAF requests until it pairs again",
               worker_id);
  update_channel_gauge(self);
}

/// One round trip over the channel to `worker_id` (its engine answers an
/// empty probe itself) before the pair's calls take it: where UCX cannot
/// reach a peer that CAF can (UCX's ports closed), they stay on CAF.
/// Calls done(true) when the answer came back by the deadline and
/// `pairing` is still the peer's. The deadline is half the request timeout
/// (at most 5 s): the dialler's add_peer, a request itself, waits on it.
template <class Done>
void probe_channel(gateway_ptr self, uint64_t worker_id, uint64_t pairing, Done done) {
  const auto& engine = self->state.params.engine;
  auto timeout = std::min<std::chrono::milliseconds>(
    self->state.params.node->request_timeout / 2, std::chrono::seconds{5});
  auto counted = [=](bool ok) {
    if (auto* m = self->state.params.metrics)
      m->control_probes[ok ? 0 : 1]->Increment();
  };
  self->request(engine.actor(), timeout + channel_call_margin, control_call_atom::value,
                worker_id, static_cast<uint8_t>(control_op::probe), std::string{},
                static_cast<uint64_t>(timeout.count()))
    .then(
      [=](const chunk_bytes&, const chunk_bytes&) mutable {
        bool current = is_current(self, worker_id, pairing);
        if (current) // a stale answer decides nothing: not counted
          counted(true);
        done(current);
      },
      [=](caf::error& err) mutable {
        counted(false);
        spdlog::warn("control channel to peer {:016x}: no answer to its probe ({}); "
                     "rendezvous calls stay on CAF requests",
                     worker_id, describe(err));
        done(false);
      });
  engine.wake();
}

/// Gives the engine the pair's tokens for `peer` (its frames then carry
/// token_in, ours token_out once `confirmed`), then calls done(bool registered).
template <class Done>
void register_tokens(gateway_ptr self, const peer_hello& peer, uint64_t token_out,
                     uint64_t token_in, bool confirmed, Done done) {
  const auto& engine = self->state.params.engine;
  auto wid = peer.worker_id;
  self->request(engine.actor(), self->state.params.node->request_timeout,
                control_peer_atom::value, wid, token_out, token_in, peer.gateway.node(),
                confirmed)
    .then(
      [=](bool on) mutable {
        if (on && self->state.peers.count(wid) > 0)
          self->state.control_peers.insert(wid);
        done(on && self->state.peers.count(wid) > 0);
      },
      [=](caf::error& err) mutable {
        spdlog::warn("control channel to peer {:016x} not set up: {}", wid, describe(err));
        done(false);
      });
  engine.wake();
}

/// True when UCX GETs with `peer` may go: it is registered on this node's
/// engine, and the pair reads one-sided or this node allows emulated GETs
/// (rdma/one_sided_reads.hpp). Else its gets take the chunked path.
bool takes_gets(gateway_ptr self, const peer_hello& peer) {
  const auto& params = self->state.params;
  return self->state.ucx_peers.count(peer.worker_id) > 0
         && (params.emulated_gets
             || reads_one_sided(params.identity.capabilities, peer.capabilities));
}

void add_peer(gateway_ptr self, peer_hello peer) {
  if (peer.worker_id == self->state.params.identity.worker_id || !peer.gateway)
    return;
  // A hello's token is for this exchange only: not kept, not shown.
  peer.capabilities = without_lost(shown_capabilities(peer.capabilities));
  if (const auto& lost = self->state.params.node->lost)
    lost->back(peer.worker_id);
  self->state.control_ready.erase(peer.worker_id); // until this hello's tokens are in
  new_pairing(self, peer.worker_id);
  auto [i, added] = self->state.peers.insert_or_assign(peer.worker_id, peer);
  if (added) {
    // A client (port 0: ferry stat, get, put) comes and goes: not news.
    spdlog::log(peer.port == 0 ? spdlog::level::debug : spdlog::level::info,
                "peer {:016x} joined ({}:{}, incarnation {:016x})", peer.worker_id,
                peer.host, peer.port, peer.incarnation);
    announce(self, peer);
  }
  self->monitor(peer.gateway);
  const auto& engine = self->state.params.engine;
  auto has_ucx = std::find(peer.capabilities.begin(), peer.capabilities.end(),
                           "ucx")
                 != peer.capabilities.end();
  if (engine && has_ucx && !peer.ucx_address.empty()) {
    caf::anon_send(engine.actor(), ucx_peer_atom::value, peer.worker_id,
                   peer.ucx_address, peer.gateway,
                   wants_failure_reports(self->state.params.identity.capabilities,
                                         peer.capabilities));
    engine.wake();
    self->state.ucx_peers.insert(peer.worker_id);
  }
  if (auto& dir = self->state.params.directory)
    dir->put(peer.worker_id,
             {peer.owner, takes_gets(self, peer), peer.messenger, false, peer.gateway});
  update_channel_gauge(self);
}

/// Ends everything of the peer at `i` on this node (its UCX keys, its
/// leases and the copies staged for it, the messenger's calls and streams
/// with it) and drops it from the peer table. Membership hears of a peer
/// that `left` (it dials it again); one whose hello ended its old session
/// is registered again at once.
void forget_peer(gateway_ptr self, std::map<uint64_t, peer_hello>::iterator i, bool left) {
  auto wid = i->first;
  auto node = i->second.gateway.node();
  // Its unpacked keys (and the mappings of its memory) go with it.
  const auto& engine = self->state.params.engine;
  // Urgent: ahead of GETs queued for it, none of which may unpack
  // a key of memory that went with its process (UCX 1.13 crashes on
  // a shared-memory key it cannot attach: docs/known-issues.md).
  if (engine && self->state.ucx_peers.count(wid) > 0) {
    caf::anon_send<caf::message_priority::high>(engine.actor(), ucx_forget_atom::value, wid);
    engine.wake();
  }
  if (auto& dir = self->state.params.directory)
    dir->erase(wid);
  // Its leases on our owner end with it, and the messenger's calls to it.
  const auto& ctx = *self->state.params.node;
  self->send(ctx.owner, peer_down_atom::value, node);
  if (ctx.messenger)
    self->send(caf::actor_cast<messenger_actor>(ctx.messenger), peer_down_atom::value, node);
  if (auto& m = self->state.params.membership; m && left)
    caf::anon_send(m, peer_down_atom::value, wid);
  self->state.ucx_peers.erase(wid);
  self->state.control_peers.erase(wid);
  self->state.control_ready.erase(wid);
  self->state.pending_token_out.erase(wid);
  self->state.pairing.erase(wid);
  self->state.peers.erase(i);
  update_channel_gauge(self);
}

/// A registered peer whose hello says it lost this node ended everything
/// it had with us, though our side of the connection held: its old
/// session ends here too, before the new one is registered.
void end_session_it_lost(gateway_ptr self, const peer_hello& peer) {
  if (!says_it_lost(peer.capabilities, self->state.params.identity.worker_id))
    return;
  auto i = self->state.peers.find(peer.worker_id);
  if (i == self->state.peers.end())
    return;
  spdlog::warn("peer {:016x} had lost this node: its leases, copies and calls from before end",
               peer.worker_id);
  forget_peer(self, i, false);
}

nlohmann::json describe_peer(const peer_hello& p) {
  return {{"worker_id", p.worker_id},
          {"incarnation", p.incarnation},
          {"host", p.host},
          {"port", p.port},
          {"capabilities", p.capabilities}};
}

gateway_actor::behavior_type gateway(gateway_ptr self, gateway_params params) {
  self->state.params = std::move(params);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& peers = self->state.peers;
    for (auto i = peers.begin(); i != peers.end(); ++i) {
      if (i->second.gateway.address() == dm.source) {
        spdlog::log(i->second.port == 0 ? spdlog::level::debug : spdlog::level::warn,
                    "peer {:016x} left ({})", i->first, to_string(dm.reason));
        if (const auto& lost = self->state.params.node->lost)
          lost->lost(i->first); // our next hello to it says so
        forget_peer(self, i, true);
        return;
      }
    }
  });
  self->attach_functor([workers = self->state.workers](const caf::error&) {
    for (auto& w : *workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  });
  return {
    [=](stop_work_atom) -> caf::result<caf::ok_atom> {
      auto sender = self->current_sender();
      if (!sender || sender->node() != self->node())
        return make_error(errc::not_registered, "stop_work: local only");
      self->state.stopping = true;
      return caf::ok_atom::value;
    },
    [=](hello_atom, peer_hello& peer) -> caf::result<peer_hello> {
      if (auto err = refuse_if_stopping(self, "hello"))
        return err;
      if (auto err = check_hello(peer)) {
        spdlog::warn("{}", describe(err));
        return err;
      }
      // The hello speaks for the node it came from: its gateway (whose node
      // the peer's leases are attributed to) must live there.
      if (auto sender = self->current_sender();
          sender && sender->node() != self->node() && sender->node() != peer.gateway.node()) {
        spdlog::warn("a hello naming a gateway on another node than its sender's: refused");
        return make_error(errc::protocol_violation,
                          "hello: the gateway must be on the sender's node");
      }
      auto token_out = control_token_of(peer.capabilities);
      const auto& lost = self->state.params.node->lost;
      bool we_lost_it = lost && lost->is_lost(peer.worker_id);
      end_session_it_lost(self, peer);
      add_peer(self, peer);
      auto mine = own_hello(self);
      if (we_lost_it) // it may not know: its old session with us ends
        mine.capabilities.push_back(lost_capability(peer.worker_id));
      if (!token_out || !serves_channel(self))
        return mine;
      // The channel: our engine takes the peer's frames before the peer
      // hears our answer, which offers the token they must carry. It
      // answers the peer's calls that carry token_in with the
      // peer's token; its own calls carry that token only once the peer
      // says ctl_ready (its engine knows it then).
      auto token_in = fresh_control_token();
      self->state.pending_token_out[peer.worker_id] = *token_out;
      auto rp = self->make_response_promise<peer_hello>();
      register_tokens(self, peer, *token_out, token_in, false, [=](bool on) mutable {
        if (on)
          mine.capabilities.push_back(control_token_capability(token_in));
        rp.deliver(std::move(mine));
      });
      return rp;
    },
    [=](add_peer_atom, peer_hello& peer, uint64_t token_in) -> caf::result<caf::ok_atom> {
      if (auto err = check_hello(peer))
        return err;
      auto token_out = control_token_of(peer.capabilities);
      end_session_it_lost(self, peer);
      add_peer(self, peer);
      if (!token_out || token_in == 0 || !serves_channel(self))
        return caf::ok_atom::value;
      // Both engines know the pair's tokens once ours does (the peer's took
      // them before it answered): our calls go by the channel, and the
      // peer hears that its calls to us may too.
      auto wid = peer.worker_id;
      auto known = self->state.pairing.find(wid);
      if (known == self->state.pairing.end()) // not registered (this node itself)
        return caf::ok_atom::value;
      auto pairing = known->second;
      auto rp = self->make_response_promise<caf::ok_atom>();
      auto their_gateway = caf::actor_cast<gateway_actor>(peer.gateway);
      // A probe first: its answer proves that frames go both ways. If it
      // never comes, the pair keeps CAF requests. The dialler hears back
      // once the channel is decided, so its first get already takes it.
      register_tokens(self, peer, *token_out, token_in, true, [=](bool on) mutable {
        if (!on) {
          rp.deliver(caf::ok_atom::value);
          return;
        }
        probe_channel(self, wid, pairing, [=](bool ok) mutable {
          if (ok) {
            control_is_ready(self, wid);
            self->send(their_gateway, control_ready_atom::value,
                       self->state.params.identity.worker_id);
          }
          rp.deliver(caf::ok_atom::value);
        });
      });
      return rp;
    },
    [=](control_ready_atom, uint64_t worker_id) {
      // Only the peer itself, whose tokens our engine has.
      const auto* peer = sent_by_peer(self, worker_id);
      auto pending = self->state.pending_token_out.find(worker_id);
      if (!peer || self->state.control_peers.count(worker_id) == 0
          || pending == self->state.pending_token_out.end())
        return;
      auto token_out = pending->second;
      self->state.pending_token_out.erase(pending);
      auto pairing = self->state.pairing[worker_id];
      auto their_gateway = caf::actor_cast<gateway_actor>(peer->gateway);
      // Its engine knows the token now: ours calls with it from here on.
      const auto& engine = self->state.params.engine;
      self->request(engine.actor(), self->state.params.node->request_timeout,
                    control_ready_atom::value, worker_id, token_out)
        .then(
          [=](bool on) {
            if (!on || self->state.peers.count(worker_id) == 0)
              return;
            probe_channel(self, worker_id, pairing, [=](bool ok) {
              if (ok) {
                control_is_ready(self, worker_id);
                return;
              }
              // The peer's probe went through, ours did not: its calls to
              // us go back to CAF too (their answers may not reach it).
              if (is_current(self, worker_id, pairing))
                self->send(their_gateway, control_lost_atom::value,
                           self->state.params.identity.worker_id);
            });
          },
          [=](caf::error& err) {
            spdlog::warn("control channel to peer {:016x} not confirmed: {}", worker_id,
                         describe(err));
          });
      engine.wake();
    },
    [=](control_lost_atom, uint64_t worker_id) {
      auto sender = self->current_sender();
      if (sender && sender->node() == self->node()) {
        // Our engine: a send to the peer failed. The peer hears it by CAF,
        // since its calls to us would need our answers to get through
        // (also when ours are not on the channel yet: its may be).
        auto i = self->state.peers.find(worker_id);
        if (i == self->state.peers.end() || self->state.control_peers.count(worker_id) == 0)
          return;
        control_is_lost(self, worker_id);
        self->send(caf::actor_cast<gateway_actor>(i->second.gateway), control_lost_atom::value,
                   self->state.params.identity.worker_id);
        return;
      }
      if (!sent_by_peer(self, worker_id))
        return;
      // The peer itself: our calls out to it may never be answered (its
      // answers fail to send); our engine answers them no_channel, and the
      // consumers make them again by CAF.
      control_is_lost(self, worker_id);
      if (const auto& engine = self->state.params.engine) {
        caf::anon_send(engine.actor(), control_lost_atom::value, worker_id);
        engine.wake();
      }
    },
    [=](members_atom) -> caf::result<std::vector<std::string>> {
      if (!is_registered(self, self->current_sender()))
        return make_error(errc::not_registered, "members: say hello first");
      std::vector<std::string> eps;
      for (const auto& [wid, p] : self->state.peers)
        if (p.port != 0)
          eps.push_back(endpoint_text(p.host, p.port));
      return eps;
    },
    [=](member_atom, const std::string& ep) {
      // Only a member may make this node dial somewhere.
      if (!is_registered(self, self->current_sender()))
        return;
      if (auto& m = self->state.params.membership)
        caf::anon_send(m, member_atom::value, ep);
    },
    [=](ucx_goodbye_atom, uint64_t worker_id) {
      // Only the peer itself may close our endpoint to it.
      if (!sent_by_peer(self, worker_id)) {
        spdlog::debug("a UCX goodbye naming worker {:016x} ignored: not from it",
                      worker_id);
        return;
      }
      const auto& engine = self->state.params.engine;
      if (engine && self->state.ucx_peers.count(worker_id) > 0) {
        caf::anon_send(engine.actor(), ucx_goodbye_atom::value, worker_id);
        engine.wake();
      }
    },
    [=](ucx_fence_atom, uint64_t worker_id) -> caf::result<bool> {
      // Only the peer itself asks after the GETs this node posted to it.
      if (!sent_by_peer(self, worker_id))
        return make_error(errc::not_registered,
                          "a UCX fence answers the registered peer it names only");
      const auto& engine = self->state.params.engine;
      if (!engine || self->state.ucx_peers.count(worker_id) == 0)
        return true; // no GET of ours can read from it
      using fence_taker = caf::typed_actor<caf::replies_to<ucx_fence_atom, uint64_t>::with<bool>>;
      auto answer = self->delegate(caf::actor_cast<fence_taker>(engine.actor()),
                                   ucx_fence_atom::value, worker_id);
      engine.wake();
      return answer;
    },
    [=](lookup_atom, uint64_t worker_id) -> caf::result<caf::actor, bool> {
      if (!is_registered(self, self->current_sender()))
        return make_error(errc::not_registered,
                          "lookup: only registered peers (say hello first)");
      const auto& node = *self->state.params.node;
      if (worker_id == node.worker_id)
        return {caf::actor_cast<caf::actor>(node.owner), false};
      auto i = self->state.peers.find(worker_id);
      if (i == self->state.peers.end())
        return make_error(errc::unknown_owner,
                          "worker " + std::to_string(worker_id)
                            + " is not a known peer of this node");
      return {i->second.owner, takes_gets(self, i->second)};
    },
    [=](staging_source_atom a, uint64_t worker_id) -> caf::result<caf::actor> {
      auto sender = self->current_sender();
      bool local = sender && sender->node() == self->node();
      if (!local && !is_registered(self, sender))
        return make_error(errc::not_registered,
                          "staging source: only registered peers (say hello first)");
      const auto& node = *self->state.params.node;
      if (worker_id == node.worker_id) {
        if (!self->state.params.staging_source)
          return make_error(errc::staging_unavailable, "this node has no staging source");
        return self->state.params.staging_source;
      }
      if (!local) // a peer asks only for this node's own
        return make_error(errc::unknown_owner, "staging source: ask the node itself");
      auto i = self->state.peers.find(worker_id);
      if (i == self->state.peers.end())
        return make_error(errc::unknown_owner,
                          "worker " + std::to_string(worker_id)
                            + " is not a known peer of this node");
      return self->delegate(caf::actor_cast<gateway_actor>(i->second.gateway), a, worker_id);
    },
    [=](spawn_atom, const std::string& name,
        const caf::message& args) -> caf::result<caf::actor> {
      if (auto err = refuse_if_stopping(self, "spawn"))
        return err;
      auto& workers = self->state.params.workers;
      auto i = workers.find(name);
      if (i == workers.end())
        return make_error(errc::unknown_worker_type,
                          "no worker type '" + name + "' on this node");
      auto worker = i->second(self->system(), *self->state.params.node, args);
      if (!worker)
        return worker.error();
      self->state.workers->push_back(*worker);
      spdlog::info("spawned worker '{}'", name);
      return *worker;
    },
    [=](adopt_atom, const data_handle& h,
        const std::string& options) -> caf::result<data_handle> {
      if (auto err = refuse_if_stopping(self, "adopt"))
        return err;
      bool pinned = false;
      try {
        auto j = nlohmann::json::parse(options);
        pinned = j.is_object() && j.value("pinned", false);
      } catch (const std::exception& e) {
        return make_error(errc::malformed_body,
                          std::string{"adopt options: "} + e.what());
      }
      auto rp = self->make_response_promise<data_handle>();
      const auto& node = *self->state.params.node;
      auto consumer = node.consumer;
      auto owner = node.owner;
      auto request_timeout = node.request_timeout;
      auto transfer_timeout = node.transfer_timeout;
      self->request(consumer, node.get_timeout(), get_atom::value, h)
        .then(
          [=](byte_buffer& bytes, uint64_t lease) mutable {
            auto staged = pinned ? self->request(owner, transfer_timeout,
                                                 register_pinned_atom::value,
                                                 std::move(bytes), uint64_t{0})
                                 : self->request(owner, transfer_timeout,
                                                 register_atom::value,
                                                 std::move(bytes), uint64_t{0});
            staged.then(
                [=](data_handle& copy) mutable {
                  rp.deliver(copy);
                  self->request(consumer, request_timeout, release_atom::value, h,
                                lease)
                    .then([](uint64_t, bool) {},
                          [=](caf::error& err) {
                            spdlog::warn("adopt: release of {} failed: {}",
                                         to_string(h), describe(err));
                          });
                },
                [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
    [=](path_probe_atom, const data_handle& h) -> caf::result<std::string> {
      if (auto err = refuse_if_stopping(self, "probe"))
        return err;
      if (!is_registered(self, self->current_sender()))
        return make_error(errc::not_registered, "probe: say hello first");
      const auto& node = *self->state.params.node;
      auto runner = spawn_probe_runner(self->system(), node.consumer, node.get_timeout(),
                                       node.request_timeout);
      auto rp = self->make_response_promise<std::string>();
      self->request(runner, node.get_timeout() + 2 * node.request_timeout,
                    path_probe_atom::value, h)
        .then([=](std::string& report) mutable { rp.deliver(std::move(report)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
    [=](stat_atom) -> caf::result<std::string> {
      auto rp = self->make_response_promise<std::string>();
      self->request(self->state.params.node->owner,
                    self->state.params.node->request_timeout, stat_atom::value)
        .then(
          [=](std::string& owner_stat) mutable {
            const auto& id = self->state.params.identity;
            auto peers = nlohmann::json::array();
            for (auto& [wid, p] : self->state.peers)
              peers.push_back(describe_peer(p));
            nlohmann::json j = describe_peer(id);
            j["port"] = self->state.params.port->load();
            j["owner"] = nlohmann::json::parse(owner_stat);
            j["peers"] = std::move(peers);
            j["workers"] = self->state.workers->size();
            if (const auto& status = self->state.params.staging_status)
              j["staging"] = nlohmann::json::parse(status());
            rp.deliver(j.dump());
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
  };
}

} // namespace

gateway_actor spawn_gateway(caf::actor_system& sys, gateway_params params) {
  return sys.spawn(gateway, std::move(params));
}

} // namespace ferry
