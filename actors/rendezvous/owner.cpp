#include "actors/rendezvous/owner.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>

#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rendezvous/bulk_copier.hpp"
#include "actors/rendezvous/lease_holders.hpp"
#include "actors/rendezvous/lease_reaper.hpp"
#include "actors/rendezvous/owner_metrics.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "actors/rendezvous/rdma_quarantine.hpp"
#include "actors/rendezvous/slot_store.hpp"
#include "protocol/control_frame.hpp"
#include "protocol/errors.hpp"
#include "protocol/rdma_descriptor.hpp"
#include "protocol/rv_messages.hpp"

namespace ferry {

namespace {

/// The shutdown drain copies at most this much inline, in its one handler.
constexpr uint64_t drain_inline_bytes = copy_slice_bytes;

struct owner_state {
  owner_state() : store(0) {}
  slot_store store;
  lease_holders holders; // the node behind each lease
  owner_config cfg;
  owner_metrics* metrics = nullptr;
  owner_rdma_links rdma;
  int64_t reported_holds = 0; // RDMA leases the engine was told about
  bool draining = false;
  bool quarantine_ticking = false; // draining: its own tick is on its way
  // The registered blocks the shutdown drain copied slots out of. A peer's
  // GET abandoned on its side may still be queued in our UCX worker (over
  // tcp the worker serves it by reading the block), so they stay mapped
  // until the owner ends, after the node stopped its UCX engine.
  std::vector<pinned_ptr> demoted;
  // Blocks of freed slots that a peer's GET given up may still read.
  rdma_quarantine quarantine;
  lease_reaper_actor reaper;
  bool reaper_armed = false; // until a sweep reports no deadline left
  std::vector<caf::typed_response_promise<chunk_bytes>> stalled; // test hook
  // While a call that came over the control channel is answered: the node
  // it was made on behalf of (the engine names it; there is no CAF sender).
  std::optional<caf::node_id> calling_node;
  static inline const char* name = "ferry.owner";
};

using owner_ptr = owner_actor::stateful_pointer<owner_state>;

slot_store::time_point now(owner_ptr self) {
  return self->clock().now();
}

/// The few oldest slots, with what keeps each: a slot that lingers after
/// its work shows here in `ferry stat` (and in the soak's violations).
nlohmann::json describe_oldest_slots(owner_ptr self) {
  constexpr size_t shown = 4;
  auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  auto out = nlohmann::json::array();
  for (const auto& d : self->state.store.oldest_slots(now(self), shown)) {
    nlohmann::json j{{"handle", to_string(d.handle)},
                     {"bytes", d.bytes},
                     {"refs", d.refcount},
                     {"leases", d.leases},
                     {"held_leases", d.held_leases},
                     {"rdma_leases", d.rdma_leases},
                     {"pinned", d.pinned},
                     {"age_ms", ms(d.age)}};
    if (d.addressed_to != 0)
      j["addressed_to_holder"] = d.addressed_to;
    if (d.expires_in)
      j["expires_in_ms"] = ms(*d.expires_in);
    out.push_back(std::move(j));
  }
  return out;
}

void update_gauges(owner_ptr self) {
  auto* m = self->state.metrics;
  if (!m)
    return;
  auto s = self->state.store.current_stats();
  m->slots->Set(static_cast<double>(s.slots));
  m->staged_bytes->Set(static_cast<double>(s.staged_bytes));
  m->leases->Set(static_cast<double>(s.leases));
}

std::chrono::milliseconds reaper_period(const owner_config& cfg);

void arm_reaper_if_needed(owner_ptr self) {
  auto& st = self->state;
  // Draining, the reaper is gone; the quarantine still has to let its
  // blocks go (a holder gone, a fence answered, the longest hold), or the
  // pool's drain waits for them until the node's deadline: the owner
  // ticks itself for it.
  if (st.draining && !st.quarantine.empty() && !st.quarantine_ticking) {
    st.quarantine_ticking = true;
    self->delayed_send(self, reaper_period(st.cfg), tick_atom::value);
  }
  if (!st.reaper || st.reaper_armed || (!st.store.has_deadlines() && st.quarantine.empty()))
    return;
  self->send(st.reaper, arm_atom::value);
  st.reaper_armed = true;
}

void count_path(owner_ptr self, path_reason reason) {
  if (self->state.metrics)
    self->state.metrics->paths->count(reason == path_reason::ok
                                        ? transfer_path::rdma
                                        : transfer_path::chunked,
                                      reason);
}

/// Tells the engine how many descriptors are out, so it progresses the
/// worker for emulated GETs while any is.
void sync_holds(owner_ptr self) {
  auto& st = self->state;
  // A quarantined block counts: the peer's GET that may read it must be
  // served (and so end), or the fence that lets it go never answers.
  auto now_out = static_cast<int64_t>(st.store.rdma_leases() + st.quarantine.blocks());
  if (now_out == st.reported_holds || !st.rdma.engine)
    return;
  caf::anon_send(st.rdma.engine.actor(), ucx_hold_atom::value,
                 now_out - st.reported_holds);
  st.rdma.engine.wake();
  st.reported_holds = now_out;
}

// -- the quarantine: blocks a peer's GET given up may still read -----------

void tend_quarantine(owner_ptr self);

/// The gateway of holder `holder`'s node, where its fence goes; empty when
/// that node is not (or no longer) a registered peer.
caf::actor fence_target(owner_ptr self, uint64_t holder, uint64_t* worker_id = nullptr) {
  auto& st = self->state;
  auto node = st.holders.node_of(holder);
  if (!node || !st.rdma.peers)
    return {};
  auto peer = st.rdma.peers->find_node(*node);
  if (!peer)
    return {};
  if (worker_id)
    *worker_id = peer->first;
  return peer->second.gateway;
}

void send_fence(owner_ptr self, uint64_t holder) {
  auto& st = self->state;
  auto gateway = fence_target(self, holder);
  if (!gateway) {
    st.quarantine.fence_answered(holder, false, now(self));
    return;
  }
  auto answered = [=](bool ok) {
    self->state.quarantine.fence_answered(holder, ok, now(self));
    tend_quarantine(self);
  };
  self->request(gateway, st.cfg.request_timeout, ucx_fence_atom::value, st.store.worker_id())
    .then([=](bool ok) { answered(ok); },
          [=](caf::error& err) {
            spdlog::debug("owner: UCX fence to holder {} failed: {}", holder, describe(err));
            answered(false);
          });
}

/// Lets go what the quarantine cleared, hands blocks past their longest hold
/// to the engine (it closes the endpoints to their peers, then drops them),
/// sends the fences due; the gauges, the engine's holds and the reaper follow.
void tend_quarantine(owner_ptr self) {
  auto& st = self->state;
  auto t = now(self);
  auto released = st.quarantine.collect(t);
  for (auto& forced : released.forced) {
    std::vector<uint64_t> workers;
    for (auto holder : forced.holders) {
      uint64_t worker = 0;
      if (fence_target(self, holder, &worker))
        workers.push_back(worker);
    }
    spdlog::warn("owner: a quarantined block of {} bytes goes after {} ms without a "
                 "fence; the UCX endpoints to its {} peer(s) close first",
                 forced.bytes, st.cfg.quarantine_max_hold.count(), workers.size());
    if (st.rdma.engine && !workers.empty()) {
      caf::anon_send(st.rdma.engine.actor(), ucx_retire_atom::value, std::move(workers),
                     std::move(forced.block));
      st.rdma.engine.wake();
    }
  }
  if (auto* m = st.rdma.metrics) {
    auto count = [&](quarantine_cleared_by c, uint64_t n) {
      if (n > 0)
        m->quarantine_released[static_cast<int>(c)]->Increment(static_cast<double>(n));
    };
    count(quarantine_cleared_by::fence, released.by_fence);
    count(quarantine_cleared_by::peer_down, released.by_peer_down);
    count(quarantine_cleared_by::forced, released.forced.size());
    m->quarantined_bytes->Set(static_cast<double>(st.quarantine.bytes()));
  }
  for (auto holder : st.quarantine.fences_due(t))
    send_fence(self, holder);
  sync_holds(self);
  arm_reaper_if_needed(self);
}

/// After a store call that may free slots: the blocks a GET may still read
/// go into the quarantine instead of back to the pool. `gone`: a holder
/// whose node went away (its blocks wait a short grace, then go).
void quarantine_freed(owner_ptr self, std::optional<uint64_t> gone = std::nullopt) {
  auto& st = self->state;
  auto t = now(self);
  for (auto& u : st.store.take_unsettled()) {
    st.quarantine.add(std::move(u.block), u.len, u.readers, t);
    // A reader whose node went before its slot was freed gets no fence.
    for (auto r : u.readers)
      if (!st.holders.node_of(r))
        st.quarantine.holder_gone(r, t);
  }
  if (gone)
    st.quarantine.holder_gone(*gone, t);
  if (!st.quarantine.empty())
    tend_quarantine(self);
}

/// The holder id of the node that sent the current message (0: this node),
/// watching one of its actors so a dropped connection is noticed even for
/// a node that never said hello.
uint64_t holder_of_sender(owner_ptr self) {
  if (const auto& node = self->state.calling_node) // the gateway's peer_down ends it
    return *node == self->node() ? 0 : self->state.holders.id_for(*node);
  const auto& sender = self->current_sender();
  if (!sender || sender->node() == self->node())
    return 0;
  auto& holders = self->state.holders;
  auto id = holders.id_for(sender->node());
  if (holders.watch(sender->address()))
    self->monitor(sender);
  return id;
}

/// The node the current call came from (the control channel names it; a
/// CAF request's sender does); empty when unknown.
caf::node_id calling_node_of(owner_ptr self) {
  if (const auto& node = self->state.calling_node)
    return *node;
  const auto& sender = self->current_sender();
  return sender ? sender->node() : caf::node_id{};
}

/// not_registered for a remote sender whose node never said hello (none
/// when the sender is local, registered, or nothing is checked).
caf::error refuse_stranger(owner_ptr self) {
  const auto& peers = self->state.rdma.peers;
  auto node = calling_node_of(self);
  if (!peers || node == caf::node_id{} || node == self->node() || peers->knows_node(node))
    return caf::none;
  return make_error(errc::not_registered,
                    "rendezvous calls are answered to registered peers only");
}

/// A node went away: every lease and transfer it held here ends now.
void drop_node(owner_ptr self, const caf::node_id& node) {
  auto id = self->state.holders.forget(node);
  if (!id)
    return;
  auto dropped = self->state.store.drop_holder(*id);
  quarantine_freed(self, *id);
  if (dropped.leases == 0 && dropped.copies == 0)
    return;
  spdlog::info("owner: node {} went away: {} of its leases ended, {} copies staged "
               "for it dropped", to_string(node), dropped.leases, dropped.copies);
  if (auto* m = self->state.metrics)
    m->leases_dropped_peer_down->Increment(static_cast<double>(dropped.leases));
  sync_holds(self);
  update_gauges(self);
}

bool offers_ucx(const rv_acquire_request& req) {
  for (auto& b : req.rdma->backends)
    if (b == "ucx")
      return true;
  return false;
}

/// False when the calling node is a peer this node takes no GETs with: the
/// pair would only emulate them, which the owner's UCX serves and can abort
/// on (rdma/one_sided_reads.hpp). True where no directory tells.
bool caller_takes_gets(owner_ptr self) {
  const auto& peers = self->state.rdma.peers;
  auto node = calling_node_of(self);
  if (!peers || node == caf::node_id{} || node == self->node())
    return true;
  auto peer = peers->find_node(node);
  return peer && peer->second.ucx_gets;
}

/// The path decision: the first failing check names the reason, in the
/// spec's order (offer, registry, kill switch, pinned, size, backend,
/// draining). The descriptor check (8) happens when it is encoded. An offer
/// from a peer whose GETs this node does not take fails the backend check:
/// the backend it names cannot serve that pair.
path_reason path_for(owner_ptr self, const rv_acquire_request& req,
                     const pinned_ptr& block, uint64_t total_len) {
  const auto& cfg = self->state.cfg;
  if (!req.rdma)
    return path_reason::no_offer;
  if (!cfg.rdma_configured)
    return path_reason::not_configured;
  if (!cfg.rdma_enabled)
    return path_reason::kill_switch;
  if (!block)
    return path_reason::not_pinned;
  if (total_len < cfg.rdma_min_bytes)
    return path_reason::below_min;
  if (!offers_ucx(req) || !caller_takes_gets(self))
    return path_reason::no_offer;
  if (self->state.draining)
    return path_reason::draining;
  return path_reason::ok;
}

/// Test hook: corrupts an encoded descriptor the way a broken owner would.
void apply_descriptor_fault(const std::string& fault, std::vector<uint8_t>& d) {
  if (fault == "unknown_backend")
    d[0] = 0x7f;
  else if (fault == "truncated")
    d.resize(d.size() - 1);
  else if (fault == "trailing_byte")
    d.push_back(0);
  else if (fault == "lying_key_length" && d.size() > 28)
    d[27] = static_cast<uint8_t>(d[27] + 1); // rkey_len one too large
}

/// Builds the RDMA answer, or nullopt when the descriptor does not encode.
std::optional<rv_acquire_response>
grant_rdma(owner_ptr self, const data_handle& h, uint64_t holder) {
  auto& st = self->state;
  auto grant = st.store.acquire_rdma(h, now(self), st.cfg.lease_timeout, holder);
  if (!grant || !grant->block)
    return std::nullopt;
  rdma_descriptor d;
  d.generation = grant->block->generation();
  d.addr = grant->block->address();
  d.len = grant->total_len;
  d.rkey = grant->block->rkey();
  auto bytes = encode_descriptor(d);
  if (bytes.empty()) {
    st.store.detach(h, grant->lease_id);
    return std::nullopt;
  }
#ifdef FERRY_TEST_HOOKS
  if (!st.cfg.test_descriptor_fault.empty())
    apply_descriptor_fault(st.cfg.test_descriptor_fault, bytes);
#endif
  rv_acquire_response resp;
  resp.rdma = rv_rdma_grant{grant->lease_id, std::move(bytes),
                            static_cast<uint64_t>(st.cfg.lease_timeout.count()),
                            grant->total_len};
  return resp;
}

/// What an acquire gets: an error, or an answer and, for an eager acquire
/// whose payload fits, the payload itself; `rdma` when a descriptor went out.
struct acquire_outcome {
  caf::error error;
  rv_acquire_response answer;
  chunk_bytes eager;
  bool rdma = false;
};

/// The eager part of a chunked answer whose payload fits one (see
/// decide_acquire): the payload goes with the answer (its one pull served
/// here, so its transfer is done as after a last pull).
void answer_eagerly(owner_ptr self, acquire_outcome& out) {
  auto& st = self->state;
  auto& ready = *out.answer.ready;
#ifdef FERRY_TEST_HOOKS
  if (ready.chunk_count > 0 && st.cfg.stall_pulls_from == 0)
    return; // the test wants the pull of chunk 0 to stall
#endif
  if (ready.chunk_count == 1) {
    auto chunk = st.store.pull(ready.transfer_id, 0, now(self));
    if (!chunk) // the consumer's pull meets the same error
      return;
    out.eager = std::move(*chunk);
  }
  ready.eager = true;
  if (auto* m = st.metrics) {
    m->eager_answers->Increment();
    m->eager_bytes->Increment(static_cast<double>(out.eager.size()));
  }
}

/// The owner's side of an acquire: RDMA when the path allows and the
/// descriptor encodes, else a chunked lease (eager: its payload with it).
/// A payload an eager answer can carry takes that way, not RDMA (counted
/// below_min: for an eager acquire the RDMA minimum is above the limit).
acquire_outcome decide_acquire(owner_ptr self, const std::string& body, bool eager) {
  acquire_outcome out;
  if ((out.error = refuse_stranger(self)))
    return out;
  auto req = decode<rv_acquire_request>(body);
  if (!req) {
    out.error = std::move(req.error());
    return out;
  }
  auto block = self->state.store.pinned_block_of(req->handle);
  if (!block) {
    out.error = std::move(block.error());
    return out;
  }
  auto total = self->state.store.metadata(req->handle)->total_len;
  auto reason = path_for(self, *req, *block, total);
  // An eager answer carries at most the smaller of both sides' eager_max,
  // in one chunk or none, and never more than a control frame's payload.
  const auto& cfg = self->state.cfg;
  bool fits_eagerly = eager && total <= std::min({req->eager_max, cfg.eager_max, cfg.chunk_size,
                                                   uint64_t{max_control_payload}});
  if (reason == path_reason::ok && fits_eagerly)
    reason = path_reason::below_min; // one round trip beats an acquire and a GET
  auto holder = holder_of_sender(self);
  if (reason == path_reason::ok) {
    if (auto resp = grant_rdma(self, req->handle, holder)) {
      count_path(self, path_reason::ok);
      out.answer = std::move(*resp);
      out.rdma = true;
      update_gauges(self); // before the answer: a scrape after it sees the lease
      return out;
    }
    reason = path_reason::not_pinned; // check 8: the staging is gone
  }
  auto lease_deadline = std::chrono::milliseconds{req->lease_ms};
  auto ready = self->state.store.acquire(req->handle, now(self), lease_deadline, holder,
                                         req->holds);
  if (!ready) {
    out.error = std::move(ready.error());
    return out;
  }
  count_path(self, reason);
  out.answer.ready = *ready;
  if (fits_eagerly)
    answer_eagerly(self, out);
  update_gauges(self); // before the answer: a scrape after it sees the lease
  return out;
}

/// After an acquire's answer went out: the reaper and the engine's holds
/// (the gauges were set before it).
void after_acquire(owner_ptr self, bool rdma) {
  arm_reaper_if_needed(self);
  if (rdma)
    sync_holds(self);
}

// -- the rendezvous calls' answers ------------------------------------------
// The same functions answer a call whichever channel carried it: a CAF
// request (the handlers below) or the control channel (answer_channel_call).

/// A call's request, from a registered peer (or this node) and well formed.
template <class Request>
caf::expected<Request> admitted(owner_ptr self, const std::string& body) {
  if (auto err = refuse_stranger(self))
    return err;
  return decode<Request>(body);
}

caf::expected<std::string> answer_metadata(owner_ptr self, const std::string& body) {
  auto req = admitted<rv_metadata_request>(self, body);
  if (!req)
    return req.error();
  auto md = self->state.store.metadata(req->handle);
  if (!md)
    return md.error();
  return encode(*md);
}

caf::expected<chunk_bytes> answer_pull(owner_ptr self, const std::string& body) {
  auto req = admitted<rv_pull_request>(self, body);
  if (!req)
    return req.error();
  auto chunk = self->state.store.pull(req->transfer_id, req->index, now(self));
  if (!chunk)
    return chunk.error();
  if (auto* m = self->state.metrics) {
    m->chunks_served->Increment();
    m->bytes_served->Increment(static_cast<double>(chunk->size()));
  }
  return chunk;
}

#ifdef FERRY_TEST_HOOKS
/// Test hook: whether this pull is one the test wants never answered.
bool stalls(owner_ptr self, const std::string& body) {
  if (refuse_stranger(self))
    return false;
  auto req = decode<rv_pull_request>(body);
  return req && req->index >= self->state.cfg.stall_pulls_from
         && self->state.store.pull(req->transfer_id, req->index, now(self));
}
#endif

caf::expected<std::string> answer_ref(owner_ptr self, const std::string& body) {
  auto req = admitted<rv_ref_request>(self, body);
  if (!req)
    return req.error();
  auto count = self->state.store.ref(req->handle);
  if (!count)
    return count.error();
  return encode(rv_ref_response{*count});
}

caf::expected<std::string> answer_detach(owner_ptr self, const std::string& body) {
  auto req = admitted<rv_detach_request>(self, body);
  if (!req)
    return req.error();
  if (auto err = self->state.store.detach(req->handle, req->lease_id, req->get_unfinished))
    return err;
  quarantine_freed(self);
  sync_holds(self);
  update_gauges(self);
  return std::string{"{}"};
}

caf::expected<std::string> answer_release(owner_ptr self, const std::string& body) {
  auto req = admitted<rv_release_request>(self, body);
  if (!req)
    return req.error();
  auto resp = self->state.store.release(req->handle, req->lease_id, req->get_unfinished);
  if (!resp)
    return resp.error();
  quarantine_freed(self);
  sync_holds(self);
  update_gauges(self);
  return encode(*resp);
}

caf::expected<std::string> answer_renew(owner_ptr self, const std::string& body) {
  auto req = admitted<rv_lease_renew_request>(self, body);
  if (!req)
    return req.error();
  if (req->held) {
    if (auto err = self->state.store.hold(req->handle, req->lease_id))
      return err;
    sync_holds(self);
    return std::string{"{}"};
  }
  if (auto err = self->state.store.renew(req->handle, req->lease_id, now(self)))
    return err;
  return std::string{"{}"};
}

/// A call that came over the control channel, as the engine hands it over.
struct channel_call {
  uint64_t peer = 0;    // the caller's worker id
  uint64_t call_id = 0; // the caller's
  uint8_t op = 0;       // control_op
  bool one_way = false; // no answer goes back
  caf::node_id node;    // the caller's node: its leases are attributed to it
};

/// What a channel call's answer carries: the JSON answer and, for a pull,
/// the chunk (an eager acquire: the payload beside the JSON).
struct channel_answer {
  caf::error error;
  std::string json;
  chunk_bytes bytes;
  bool acquired = false; // an acquire was answered
  bool rdma = false;     // ... with a descriptor
};

channel_answer from(caf::expected<std::string> r) {
  channel_answer a;
  if (r)
    a.json = std::move(*r);
  else
    a.error = std::move(r.error());
  return a;
}

channel_answer dispatch_channel_call(owner_ptr self, control_op op, const std::string& body) {
  switch (op) {
    case control_op::metadata:
      return from(answer_metadata(self, body));
    case control_op::acquire: {
      // The channel has one acquire: eager whenever the body asks (eager_max).
      auto out = decide_acquire(self, body, true);
      channel_answer a;
      a.error = std::move(out.error);
      if (!a.error) {
        a.json = encode(out.answer);
        a.bytes = std::move(out.eager);
        a.acquired = true;
        a.rdma = out.rdma;
      }
      return a;
    }
    case control_op::pull: {
      channel_answer a;
      auto chunk = answer_pull(self, body);
      if (chunk)
        a.bytes = std::move(*chunk);
      else
        a.error = std::move(chunk.error());
      return a;
    }
    case control_op::ref:
      return from(answer_ref(self, body));
    case control_op::detach:
      return from(answer_detach(self, body));
    case control_op::release:
      return from(answer_release(self, body));
    case control_op::lease_renew:
      return from(answer_renew(self, body));
    case control_op::probe: // the engine answers it; never the owner's
      break;
  }
  channel_answer a;
  a.error = make_error(errc::protocol_violation, "not an owner's control op");
  return a;
}

/// Answers a call the UCX engine took off the control channel: attributed
/// to the caller's node, answered by the same functions as a CAF request,
/// and the answer handed back to the engine (none for a one-way call).
void answer_channel_call(owner_ptr self, const channel_call& c, const std::string& body) {
  const auto& sender = self->current_sender();
  const auto& engine = self->state.rdma.engine;
  if (!sender || sender->node() != self->node() || !engine)
    return; // only this node's engine hands over channel calls
  if (c.op == 0 || c.op > control_op_max || c.node == caf::node_id{})
    return;
  self->state.calling_node = c.node;
#ifdef FERRY_TEST_HOOKS
  if (static_cast<control_op>(c.op) == control_op::pull && stalls(self, body)) {
    self->state.calling_node.reset();
    return; // the test wants it never answered
  }
#endif
  auto a = dispatch_channel_call(self, static_cast<control_op>(c.op), body);
  self->state.calling_node.reset();
  if (!c.one_way) {
    if (a.error) {
      auto [code, text] = code_and_text(a.error);
      caf::anon_send(engine.actor(), control_error_atom::value, c.peer, c.call_id, c.op,
                     static_cast<uint8_t>(code), std::move(text));
    } else
      caf::anon_send(engine.actor(), control_answer_atom::value, c.peer, c.call_id, c.op,
                     std::move(a.json), std::move(a.bytes));
    engine.wake();
  }
  if (a.acquired)
    after_acquire(self, a.rdma);
}

/// The reaper ticks for chunked deadlines and TTLs (sweep_period) and, with
/// an RDMA path, every half lease timeout (10 ms floor).
std::chrono::milliseconds reaper_period(const owner_config& cfg) {
  auto period = cfg.sweep_period;
  if (cfg.rdma_configured)
    period = std::min(period, std::max(std::chrono::milliseconds{10},
                                       cfg.lease_timeout / 2));
  return period;
}

/// A time-to-live in ms as the store takes it (0: none).
std::optional<slot_store::duration> ttl_of(uint64_t ttl_ms) {
  if (ttl_ms == 0)
    return std::nullopt;
  return std::chrono::milliseconds{ttl_ms};
}

/// After a slot was added: the reaper armed if it has work, the gauges.
data_handle staged(owner_ptr self, data_handle h) {
  arm_reaper_if_needed(self);
  update_gauges(self);
  return h;
}

/// Stages bytes in plain memory.
data_handle stage_plain(owner_ptr self, byte_buffer bytes, uint64_t ttl_ms) {
  return staged(self, self->state.store.register_data(std::move(bytes), now(self),
                                                      ttl_of(ttl_ms)));
}

/// Stages `len` bytes of a pinned block (an arena block, or a payload
/// registered in place).
data_handle stage_block(owner_ptr self, pinned_ptr block, uint64_t len, uint64_t ttl_ms) {
  return staged(self, self->state.store.register_pinned(std::move(block), len, now(self),
                                                        ttl_of(ttl_ms)));
}

/// The pool refused registered memory: plain memory, the reason counted.
data_handle stage_refused(owner_ptr self, const caf::error& why, byte_buffer bytes,
                          uint64_t ttl_ms) {
  count_path(self, is(why, errc::budget_exhausted) ? path_reason::budget
                                                    : path_reason::pool_exhausted);
  return stage_plain(self, std::move(bytes), ttl_ms);
}

/// Stages a range of a caller's registered region with no copy: the slot
/// takes the region's anchor first and only then reads its state.
caf::expected<data_handle> stage_in_region(owner_ptr self,
                                           external_region_ptr region,
                                           uint64_t offset, uint64_t len,
                                           uint64_t ttl_ms) {
  if (!region || !region->mapped())
    return make_error(errc::invalid_argument, "the region is not registered");
  if (offset > region->size() || len > region->size() - offset)
    return make_error(errc::invalid_argument,
                      "range [" + std::to_string(offset) + ", +"
                        + std::to_string(len) + ") is outside the region's "
                        + std::to_string(region->size()) + " bytes");
  auto anchor = region->try_anchor();
  if (!anchor || region->latched())
    return make_error(errc::draining, "the region is being unregistered");
  if (len == 0) // nothing to GET: an empty plain slot, no anchor kept
    return stage_plain(self, {}, ttl_ms);
  auto view = std::make_shared<pinned_block>(
    region->data() + offset, len, region->address() + offset, region->rkey(),
    region->generation(), [anchor] {});
  return staged(self, self->state.store.register_in_region(std::move(view),
                                                          std::move(region), offset,
                                                          len, now(self), ttl_of(ttl_ms)));
}

/// Asks the pool to unregister an in-place region once the slot staged in
/// it lets go of its view (the pool frees the bytes after the unmap).
class unregister_when_released {
public:
  unregister_when_released(arena_pool_actor pool, external_region_ptr region,
                           uint64_t timeout_ms)
    : pool_(std::move(pool)), region_(std::move(region)), timeout_ms_(timeout_ms) {}
  unregister_when_released(const unregister_when_released&) = delete;
  unregister_when_released& operator=(const unregister_when_released&) = delete;
  ~unregister_when_released() {
    caf::anon_send(pool_, region_unregister_atom::value, std::move(region_), timeout_ms_);
  }

private:
  arena_pool_actor pool_;
  external_region_ptr region_;
  uint64_t timeout_ms_;
};

/// Registers a large payload where it lies (a region that owns the bytes)
/// and stages it there: no copy. Refused registrations (the budget) stage
/// it in plain memory with the reason counted.
caf::result<data_handle> stage_in_place(owner_ptr self, byte_buffer& bytes,
                                        uint64_t ttl_ms) {
  auto* data = bytes.data();
  auto size = static_cast<uint64_t>(bytes.size());
  auto region = std::make_shared<external_region>(data, size, std::move(bytes));
  auto rp = self->make_response_promise<data_handle>();
  auto pool = self->state.rdma.pool;
  auto timeout = self->state.cfg.request_timeout;
  self->request(pool, timeout, region_register_atom::value, region)
    .then(
      [=](uint64_t) mutable {
        // The slot is the region's only user: a pinned slot over a view
        // that keeps the region anchored and, once the slot lets it go,
        // unregisters it. Like an arena slot, the shutdown drain demotes it.
        auto anchor = region->try_anchor();
        auto keep = std::make_shared<unregister_when_released>(
          pool, region, static_cast<uint64_t>(timeout.count()));
        if (!anchor) {
          rp.deliver(make_error(errc::draining, "the node is shutting down"));
          return;
        }
        auto view = std::make_shared<pinned_block>(
          region->data(), size, region->address(), region->rkey(), region->generation(),
          [anchor, keep] {});
        rp.deliver(stage_block(self, std::move(view), size, ttl_ms));
      },
      [=](caf::error& err) mutable {
        rp.deliver(stage_refused(self, err, region->take_unregistered_owned(), ttl_ms));
      });
  return rp;
}

/// Stages bytes in registered memory when it can, else in plain memory
/// with the reason counted, copying them (off this thread) into an arena
/// block. `may_map` false is the messenger's transparent staging: it uses
/// arenas already mapped only, and registers a payload of
/// register_in_place_min or more where it lies instead (no copy; a
/// transparent payload is read once, so the one-sided reads an arena
/// allows matter less than the pass the copy costs).
caf::result<data_handle> stage_pinned(owner_ptr self, byte_buffer& bytes,
                                      uint64_t ttl_ms, bool may_map) {
  const auto& cfg = self->state.cfg;
  // No UCX, nothing to GET, or shutting down: plain memory.
  if (!cfg.rdma_configured || bytes.empty() || self->state.draining)
    return stage_plain(self, std::move(bytes), ttl_ms);
  if (!cfg.rdma_enabled) {
    count_path(self, path_reason::kill_switch);
    return stage_plain(self, std::move(bytes), ttl_ms);
  }
  if (!may_map && cfg.register_in_place_min > 0
      && bytes.size() >= cfg.register_in_place_min)
    return stage_in_place(self, bytes, ttl_ms);
  auto rp = self->make_response_promise<data_handle>();
  auto shared = std::make_shared<byte_buffer>(std::move(bytes));
  self
    ->request(self->state.rdma.pool, self->state.cfg.request_timeout,
              pool_alloc_atom::value,
              static_cast<uint64_t>(shared->size()), may_map)
    .then(
      [=](pinned_ptr& block) mutable {
        auto stage = [=]() mutable {
          rp.deliver(stage_block(self, block, shared->size(), ttl_ms));
        };
        // A large payload is copied off this thread; the job keeps the
        // bytes and the block alive even if its answer comes too late.
        auto keep = std::make_shared<std::pair<std::shared_ptr<byte_buffer>, pinned_ptr>>(
          shared, block);
        copy_then(
          self, self->state.rdma.copier,
          copy_job{block->data(), shared->data(), shared->size(), keep, nullptr},
          self->state.cfg.transfer_timeout, stage,
          [=](caf::error& err) mutable {
            rp.deliver(make_error(errc::timeout,
                                  "the copy into registered memory did "
                                  "not finish: " + describe(err)));
          });
      },
      [=](caf::error& err) mutable {
        rp.deliver(stage_refused(self, err, std::move(*shared), ttl_ms));
      });
  return rp;
}

owner_actor::behavior_type owner(owner_ptr self, uint64_t worker_id,
                                 owner_config cfg, owner_metrics* metrics,
                                 owner_rdma_links rdma) {
  self->state.store = slot_store{worker_id, cfg.chunk_size};
  self->state.cfg = cfg;
  self->state.quarantine = rdma_quarantine{{cfg.quarantine_fence_retry,
                                            cfg.quarantine_after_down,
                                            cfg.quarantine_max_hold}};
  self->state.metrics = metrics;
  self->state.rdma = rdma;
  if (!rdma.pool)
    self->state.cfg.rdma_configured = false;
  self->state.reaper = spawn_lease_reaper(self->system(), self,
                                          reaper_period(self->state.cfg));
  self->link_to(self->state.reaper);
  self->set_down_handler([=](caf::down_msg& dm) {
    // The middleman kills a node's proxies with this reason when its
    // connection drops (killed, or silent past the heartbeat timeout).
    if (dm.reason == caf::exit_reason::remote_link_unreachable)
      drop_node(self, dm.source.node());
    else
      self->state.holders.unwatch(dm.source);
  });
  return {
    [=](rv_metadata_atom, const std::string& body) -> caf::result<std::string> {
      return answer_metadata(self, body);
    },
    [=](rv_acquire_atom, const std::string& body) -> caf::result<std::string> {
      auto out = decide_acquire(self, body, false);
      if (out.error)
        return std::move(out.error);
      // Answer first: the book-keeping after it wakes the reaper and the
      // UCX engine, which would otherwise compete with the reply for the
      // CPU. The engine hears of an RDMA hold well before the GET could
      // arrive (a one-way trip later at the earliest), and a GET that came
      // first would only wait for it.
      auto rp = self->make_response_promise<std::string>();
      rp.deliver(encode(out.answer));
      after_acquire(self, out.rdma);
      return rp;
    },
    [=](rv_acquire_eager_atom,
        const std::string& body) -> caf::result<std::string, chunk_bytes> {
      auto out = decide_acquire(self, body, true);
      if (out.error)
        return std::move(out.error);
      auto rp = self->make_response_promise<std::string, chunk_bytes>();
      rp.deliver(encode(out.answer), std::move(out.eager));
      after_acquire(self, out.rdma);
      return rp;
    },
    [=](rv_pull_atom, const std::string& body) -> caf::result<chunk_bytes> {
#ifdef FERRY_TEST_HOOKS
      if (stalls(self, body)) {
        auto rp = self->make_response_promise<chunk_bytes>();
        self->state.stalled.push_back(rp);
        return rp;
      }
#endif
      auto chunk = answer_pull(self, body);
      if (!chunk)
        return std::move(chunk.error());
      return std::move(*chunk);
    },
    [=](unstage_atom, const data_handle& h) -> caf::result<bool> {
      const auto& sender = self->current_sender();
      if (!sender || sender->node() != self->node())
        return make_error(errc::protocol_violation, "unstage is local only");
      auto freed = self->state.store.unref(h);
      if (!freed)
        return freed.error();
      quarantine_freed(self);
      update_gauges(self);
      return *freed;
    },
    [=](address_to_atom, const data_handle& h, const caf::actor& reader) {
      const auto& sender = self->current_sender();
      if (!sender || sender->node() != self->node() || !reader
          || reader->node() == self->node())
        return;
      auto& holders = self->state.holders;
      auto id = holders.id_for(reader->node());
      if (holders.watch(reader->address()))
        self->monitor(reader);
      (void) self->state.store.address_to(h, id); // gone already: fetched
    },
    [=](rv_ref_atom, const std::string& body) -> caf::result<std::string> {
      return answer_ref(self, body);
    },
    [=](rv_detach_atom, const std::string& body) -> caf::result<std::string> {
      return answer_detach(self, body);
    },
    [=](rv_release_atom, const std::string& body) -> caf::result<std::string> {
      return answer_release(self, body);
    },
    [=](rv_lease_renew_atom,
        const std::string& body) -> caf::result<std::string> {
      return answer_renew(self, body);
    },
    [=](control_call_atom, uint64_t peer, uint64_t call_id, uint8_t op, bool one_way,
        const caf::node_id& node, const std::string& body) {
      answer_channel_call(self, channel_call{peer, call_id, op, one_way, node}, body);
    },
    [=](register_atom, byte_buffer& bytes, uint64_t ttl_ms) -> data_handle {
      return stage_plain(self, std::move(bytes), ttl_ms);
    },
    [=](register_pinned_atom, byte_buffer& bytes,
        uint64_t ttl_ms) -> caf::result<data_handle> {
      return stage_pinned(self, bytes, ttl_ms, true);
    },
    [=](register_pinned_atom, byte_buffer& bytes, uint64_t ttl_ms,
        bool may_map) -> caf::result<data_handle> {
      return stage_pinned(self, bytes, ttl_ms, may_map);
    },
    [=](region_stage_atom, external_region_ptr& region, uint64_t offset,
        uint64_t len, uint64_t ttl_ms) -> caf::result<data_handle> {
      return stage_in_region(self, std::move(region), offset, len, ttl_ms);
    },
    [=](drain_atom) -> caf::result<uint64_t> {
      self->state.draining = true;
      // The lease reaper stops (unlinked first: its exit must not end the
      // owner), and stays stopped: an armed flag never re-arms it.
      if (auto& reaper = self->state.reaper) {
        self->unlink_from(reaper);
        self->send_exit(reaper, caf::exit_reason::user_shutdown);
        reaper = nullptr;
        self->state.reaper_armed = true;
      }
      arm_reaper_if_needed(self); // the quarantine's own tick
      // Small slots are copied here up to drain_inline_bytes in all, the
      // rest and every large one on the bulk copier (never an unbounded sum
      // of copies in this handler); the answer waits for the last copy
      // (the loop itself counts as one, so copies done inline cannot
      // answer before the loop is through).
      struct progress {
        size_t waiting = 1;
        uint64_t demoted = 0;
      };
      auto left = std::make_shared<progress>();
      auto rp = self->make_response_promise<uint64_t>();
      auto one_done = [=](bool took) mutable {
        left->demoted += took ? 1 : 0;
        if (--left->waiting == 0) {
          update_gauges(self);
          rp.deliver(left->demoted);
        }
      };
      uint64_t inline_bytes = 0;
      for (auto& d : self->state.store.plan_demotion()) {
        ++left->waiting;
        auto out = std::make_shared<byte_buffer>();
        bool here = d.len < bulk_copy_min && inline_bytes + d.len <= drain_inline_bytes;
        if (here)
          inline_bytes += d.len;
        copy_then(
          self, self->state.rdma.copier,
          copy_job{nullptr, d.block->data(), d.len, d.block, out},
          self->state.cfg.transfer_timeout,
          [=]() mutable {
            bool took = self->state.store.finish_demotion(d, std::move(*out));
            if (took)
              self->state.demoted.push_back(d.block);
            one_done(took);
          },
          [=](caf::error&) mutable { one_done(false); }, here ? bulk_copy_min : 0);
      }
      one_done(false); // the loop's own count
      return rp;
    },
    [=](tick_atom) {
      self->state.quarantine_ticking = false;
      if (!self->state.quarantine.empty())
        tend_quarantine(self); // ticks again while blocks are left
    },
    [=](peer_down_atom, const caf::node_id& node) {
      const auto& sender = self->current_sender();
      if (sender && sender->node() == self->node()) // the gateway's word only
        drop_node(self, node);
    },
    [=](sweep_atom) -> bool {
      auto result = self->state.store.sweep(now(self));
      if (auto* m = self->state.metrics) {
        m->leases_expired->Increment(static_cast<double>(result.leases_expired));
        m->slots_expired->Increment(static_cast<double>(result.slots_expired));
      }
      if (auto* r = self->state.rdma.metrics)
        r->leases_reaped->Increment(static_cast<double>(result.rdma_leases_reaped));
      quarantine_freed(self);
      sync_holds(self);
      update_gauges(self);
      // The reaper goes idle on false and waits for the next arm.
      self->state.reaper_armed =
        self->state.store.has_deadlines() || !self->state.quarantine.empty();
      return self->state.reaper_armed;
    },
    [=](stat_atom) -> std::string {
      auto s = self->state.store.current_stats();
      return nlohmann::json{{"slots", s.slots},
                            {"oldest_slots", describe_oldest_slots(self)},
                            {"staged_bytes", s.staged_bytes},
                            {"leases", s.leases},
                            {"transfers", s.transfers},
                            {"quarantine",
                             {{"blocks", self->state.quarantine.blocks()},
                              {"bytes", self->state.quarantine.bytes()}}}}
        .dump();
    },
  };
}

} // namespace

owner_actor spawn_owner(caf::actor_system& sys, uint64_t worker_id,
                        owner_config cfg, owner_metrics* metrics,
                        owner_rdma_links rdma) {
  return sys.spawn(owner, worker_id, cfg, metrics, rdma);
}

} // namespace ferry
