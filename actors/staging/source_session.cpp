#include "actors/staging/source_session.hpp"

#include <cstring>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/staging/slot_registrations.hpp"
#include "protocol/atoms.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/errors.hpp"
#include "staging/source_ring.hpp"
#include "staging/staged_copy.hpp"

namespace ferry {

namespace {

using staging::local_stager;

struct session_state {
  source_session_params p;
  std::optional<staging::source_ring> ring;
  std::vector<local_stager::chunk_loan> chunks;
  // Slots whose copy may run on with no event to confirm it (queued, then
  // its event failed to record or to answer): their chunks are retained.
  std::vector<bool> uncertain;
  // The CROSS over UCX: a READ's slots registered for the requester's
  // GETs; a WRITE's slots the GETs of the requester's slots land in.
  stage_cross_mode cross = stage_cross_mode::caf;
  uint64_t requester_worker = 0;
  slot_registrations registrations;
  std::vector<slot_landing> landings;
  caf::error failure; // sticky: every later frame but Unpin is refused
  bool ended = false;
  static inline const char* name = "ferry.source_session";

  /// However the actor ends (Unpin, its requester's loss, the deadline, an
  /// exit or an exception), its copies drain and what it holds goes back.
  ~session_state() { release(false, "the session actor ended"); }

  staging::cuda_api& api() { return p.source.stager->api(); }

  /// Runs `fn(api)` with the session's context current.
  template <class F>
  caf::error in_context(F fn) {
    return staging::in_context(api(), chunks.front().ctx, [&] { return fn(api()); });
  }

  /// Drains the copies in flight (bounded), then gives the chunks back. A
  /// chunk whose copy did not confirm, or whose registration did not
  /// unmap, stays retained; one a GET may still write goes back once the
  /// engine lets the GET go. The loan and the slot go back when every copy
  /// confirmed (a GET's slot is host memory: it never touches the range);
  /// an unconfirmed copy keeps them charged (it may still touch the
  /// range). Once only.
  void release(bool unpinned, const char* why) {
    if (ended)
      return;
    ended = true;
    auto& src = p.source;
    std::vector<bool> copied(chunks.size(), true);
    for (size_t i = 0; i < uncertain.size() && i < copied.size(); ++i)
      copied[i] = !uncertain[i];
    if (ring && !chunks.empty())
      for (auto index : ring->copying()) {
        if (!copied[index])
          continue;
        auto err = in_context([&](staging::cuda_api& a) {
          return staging::wait_event(a, chunks[index].chunk->events[0], src.event_bound);
        });
        if (err) {
          copied[index] = false;
          spdlog::warn("remote staging session {}: a chunk's copy did not drain ({})",
                       p.session, describe(err));
        }
      }
    auto unmapped = registrations.retire(src.grace / 2);
    bool confirmed = true;
    for (size_t i = 0; i < chunks.size(); ++i) {
      confirmed = confirmed && copied[i];
      bool fit = copied[i] && (i >= unmapped.size() || unmapped[i]);
      if (fit && i < landings.size() && !landings[i].quiet(std::chrono::milliseconds{200})) {
        spdlog::info("remote staging session {}: a GET into slot {} has not ended; its "
                     "chunk goes back when it does",
                     p.session, i);
        landings[i].when_quiet([stager = src.stager, loan = chunks[i]] {
          stager->give_back(loan, true);
        });
        continue;
      }
      src.stager->give_back(chunks[i], fit);
      if (!fit)
        src.stats->source_retained.fetch_add(1);
    }
    chunks.clear();
    if (confirmed) {
      src.exposures->give_back(p.session);
      src.stats->source_active.fetch_sub(1);
    } else {
      spdlog::warn("remote staging session {}: a copy did not confirm; its chunk, its "
                   "range's loan and its slot stay charged",
                   p.session);
    }
    (unpinned ? src.stats->source_unpinned : src.stats->source_abandoned).fetch_add(1);
    if (!unpinned)
      spdlog::info("remote staging session {} ended: {}", p.session, why);
  }
};
using session_actor = caf::stateful_actor<session_state>;

void end_session(session_actor* self, bool unpinned, const char* why) {
  self->state.release(unpinned, why);
  self->quit();
}

/// The CROSS over one UCX GET when the requester asks for it and this node
/// has the means: a READ registers its slots (the requester GETs them), a
/// WRITE GETs the requester's. Otherwise (or when the registrations are
/// refused: the budget) CAF requests.
void choose_cross(session_actor* self, const stage_pin& req) {
  auto& st = self->state;
  auto& src = st.p.source;
  if (req.cross != static_cast<uint8_t>(stage_cross_mode::ucx_get) || !src.ucx)
    return;
  // GETs go only with the requester's own node, as its hello registered it,
  // and not where UCX would emulate them (either way round: this node serves
  // the requester's GETs of a READ).
  if (!src.ucx.reaches(req.requester_worker, st.p.requester.node())) {
    spdlog::info("remote staging session {}: the Pin names worker {:016x}, not a "
                 "UCX peer of the requester's node this node takes GETs with; the "
                 "CROSS goes by CAF",
                 st.p.session, req.requester_worker);
    return;
  }
  if (st.ring->session().direction == stage_direction::write) {
    st.requester_worker = req.requester_worker;
    st.landings.resize(st.chunks.size());
  } else {
    std::vector<slot_memory> slots;
    for (auto& c : st.chunks)
      slots.push_back({c.chunk->data(), c.chunk->bytes});
    auto regs = slot_registrations::make(self->system(), src.ucx, slots, src.grace / 2);
    if (!regs) {
      spdlog::info("remote staging session {}: its slots were not registered ({}); the "
                   "CROSS goes by CAF",
                   st.p.session, describe(regs.error()));
      return;
    }
    st.registrations = std::move(*regs);
  }
  st.cross = stage_cross_mode::ucx_get;
  src.stats->source_ucx_sessions.fetch_add(1);
}

caf::result<stage_pin_reply> pin(session_actor* self, const stage_pin& req) {
  auto& st = self->state;
  auto& src = st.p.source;
  auto refuse = [&](caf::error err) -> caf::result<stage_pin_reply> {
    src.stats->pins_refused.fetch_add(1);
    end_session(self, false, "Pin refused");
    return err;
  };
  auto kind = st.api().memory_kind_of(st.p.loan.start, st.p.loan.length);
  if (!kind)
    return refuse(std::move(kind.error()));
  if (*kind != staging::memory_kind::device)
    return refuse(make_error(errc::invalid_argument,
                             *kind == staging::memory_kind::host
                               ? "Pin: the exposed range is host memory, not device memory"
                               : "Pin: the exposed range is not CUDA device memory"));
  auto chunk = std::min<uint64_t>(req.chunk_size, src.stager->config().chunk_size);
  auto chunks = staging::chunks_of(req.length, chunk);
  auto width = staging::ring_width(req.depth, src.depth, chunks);
  auto borrowed = src.stager->borrow(st.p.loan.device, width);
  if (!borrowed)
    return refuse(std::move(borrowed.error()));
  st.chunks = std::move(*borrowed);
  st.uncertain.assign(st.chunks.size(), false);
  staging::source_ring::scope scope;
  scope.nonce = req.nonce;
  scope.registration = req.registration;
  scope.direction = static_cast<stage_direction>(req.direction);
  scope.length = req.length;
  scope.chunk = chunk;
  scope.width = width;
  st.ring.emplace(scope);
  choose_cross(self, req);
  self->monitor(st.p.requester);
  // The budget is the requester's word: never more than this node's own
  // bound on a transfer.
  auto budget = std::min(std::chrono::milliseconds{req.budget_ms}, src.max_budget);
  self->delayed_send(self, budget + src.grace, stage_expire_atom::value);
  src.stats->pins.fetch_add(1);
  stage_pin_reply reply;
  reply.session = caf::actor_cast<caf::actor>(self);
  reply.chunk_size = chunk;
  reply.ring = width;
  reply.cross = static_cast<uint8_t>(st.cross);
  if (st.cross == stage_cross_mode::ucx_get && scope.direction == stage_direction::read)
    reply.slots = st.registrations.keys();
  return reply;
}

/// The frame's answer when the session has failed or not pinned yet.
caf::error refused(session_actor* self) {
  if (!self->state.ring)
    return make_error(errc::protocol_violation, "the session has no Pin");
  return self->state.failure;
}

/// A CROSS that carries its piece over CAF: refused unless the session
/// runs `direction` and crosses over CAF (bytes into a slot a GET may be
/// writing would be overwritten, or overwrite it).
caf::error refused_over_caf(session_actor* self, stage_direction direction,
                            const char* wrong_direction) {
  if (auto err = refused(self))
    return err;
  if (self->state.ring->session().direction != direction)
    return make_error(errc::protocol_violation, wrong_direction);
  if (self->state.cross == stage_cross_mode::ucx_get)
    return make_error(errc::protocol_violation,
                      "a CROSS over CAF in a session that crosses by UCX GET");
  return {};
}

caf::behavior source_session(session_actor* self, source_session_params p) {
  self->state.p = std::move(p);
  self->set_down_handler([self](caf::down_msg&) {
    end_session(self, false, "its requester went away");
  });
  self->set_exit_handler([self](caf::exit_msg&) {
    end_session(self, false, "told to exit (the node stops)");
  });
  return {
    [self](stage_pin_atom, const stage_pin& req) -> caf::result<stage_pin_reply> {
      if (self->state.ring)
        return make_error(errc::protocol_violation, "the session is already pinned");
      return pin(self, req);
    },
    [self](stage_delegate_atom, const stage_frame& f) -> caf::result<stage_frame> {
      auto& st = self->state;
      if (auto err = refused(self))
        return err;
      auto slot = st.ring->delegate(f);
      if (!slot)
        return std::move(slot.error());
      auto& c = *st.chunks[*slot].chunk;
      auto device = st.p.loan.start + f.offset;
      bool read = st.ring->session().direction == stage_direction::read;
      auto err = st.in_context([&](staging::cuda_api& api) -> caf::error {
        auto copied = read ? api.copy_to_host(c.data(), device, f.length, c.stream)
                           : api.copy_to_device(device, c.data(), f.length, c.stream);
        if (copied)
          return copied; // nothing was queued
        auto recorded = api.event_record(c.events[0], c.stream);
        if (recorded)
          st.uncertain[*slot] = true; // queued, with no event to confirm it
        return recorded;
      });
      auto& stats = *st.p.source.stats;
      stats.delegates.fetch_add(1);
      remote_staging_stats::raise(stats.max_in_flight, st.ring->copying().size());
      if (err) {
        st.failure = err; // the copy's state is unknown: the slot drains at the end
        return err;
      }
      return f;
    },
    [self](stage_query_atom, const stage_frame& f) -> caf::result<stage_frame, bool> {
      auto& st = self->state;
      if (auto err = refused(self))
        return err;
      auto slot = st.ring->query(f);
      if (!slot)
        return std::move(slot.error());
      auto state = staging::query_event_in(st.api(), st.chunks.front().ctx,
                                           st.chunks[*slot].chunk->events[0]);
      if (!state) {
        st.failure = state.error();
        st.uncertain[*slot] = true; // its copy's state is unknown
        return std::move(state.error());
      }
      bool complete = *state == staging::event_state::complete;
      if (complete) {
        st.ring->copy_done(*slot);
        bool read = st.ring->session().direction == stage_direction::read;
        st.p.source.stager->count_copied(read, f.length);
        st.p.source.stats->source_bytes.fetch_add(f.length);
      }
      return {f, complete};
    },
    [self](stage_cross_atom, const stage_frame& f, uint64_t offset,
           uint64_t length) -> caf::result<chunk_bytes> {
      auto& st = self->state;
      if (auto err = refused_over_caf(self, stage_direction::read,
                                      "a WRITE session's CROSS carries bytes"))
        return err;
      auto slot = st.ring->cross(f, offset, length);
      if (!slot)
        return std::move(slot.error());
      // A copy, not a view: CAF may serialize the answer after the chunk
      // went back to the pool (the requester gave up and unpinned).
      char* out = nullptr;
      auto bytes = chunk_bytes::allocate(length, &out);
      std::memcpy(out, st.chunks[*slot].chunk->data() + offset, length);
      return bytes;
    },
    [self](stage_cross_atom, const stage_frame& f, uint64_t offset,
           const chunk_bytes& bytes) -> caf::result<stage_frame> {
      auto& st = self->state;
      if (auto err = refused_over_caf(self, stage_direction::write,
                                      "a READ session's CROSS carries no bytes"))
        return err;
      auto slot = st.ring->cross(f, offset, bytes.size());
      if (!slot)
        return std::move(slot.error());
      std::memcpy(st.chunks[*slot].chunk->data() + offset, bytes.data(), bytes.size());
      st.ring->received(*slot, bytes.size());
      return f;
    },
    [self](stage_cross_atom, const stage_frame& f,
           const stage_slot_key& from) -> caf::result<stage_frame> {
      auto& st = self->state;
      if (auto err = refused(self))
        return err;
      if (st.cross != stage_cross_mode::ucx_get
          || st.ring->session().direction != stage_direction::write)
        return make_error(errc::protocol_violation,
                          "a CROSS by UCX GET outside a WRITE session over UCX");
      if (!from.plausible())
        return make_error(errc::protocol_violation, "a CROSS names a slot key out of bounds");
      auto slot = st.ring->cross_by_get(f);
      if (!slot)
        return std::move(slot.error());
      // The GET runs while other frames are served (the requester may have
      // several CROSSes out); this CROSS is answered when its GET ends.
      auto rp = self->make_response_promise<stage_frame>();
      auto index = *slot;
      auto& src = st.p.source;
      request_slot_get(self, src.ucx.engine, st.requester_worker, from, f.length,
                       st.landings[index], st.chunks[index].chunk->data(), src.grace / 2)
        .then(
          [self, rp, f, index](uint64_t) mutable {
            auto& st = self->state;
            st.ring->landed(index);
            st.p.source.stats->source_ucx_bytes.fetch_add(f.length);
            rp.deliver(f);
          },
          [self, rp](caf::error& e) mutable {
            auto err = slot_get_error(std::move(e));
            self->state.failure = err; // the slot may hold part of the chunk
            rp.deliver(err);
          });
      return rp;
    },
    [self](stage_finish_atom, const stage_frame& f) -> caf::result<stage_frame> {
      auto& st = self->state;
      if (auto err = refused(self))
        return err;
      auto slot = st.ring->finish_cross(f);
      if (!slot)
        return std::move(slot.error());
      return f;
    },
    [self](stage_unpin_atom, const stage_frame& f) -> caf::result<stage_frame> {
      auto& st = self->state;
      if (!st.ring)
        return make_error(errc::protocol_violation, "the session has no Pin");
      if (auto err = st.ring->unpin(f))
        return err;
      end_session(self, true, "Unpin");
      return f;
    },
    [self](stage_expire_atom) {
      end_session(self, false, "its deadline passed before Unpin");
    },
  };
}

} // namespace

caf::actor spawn_source_session(caf::actor_system& sys, source_session_params p) {
  return sys.spawn<caf::detached>(source_session, std::move(p));
}

} // namespace ferry
