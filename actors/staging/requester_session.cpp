#include "actors/staging/requester_session.hpp"

#include <algorithm>
#include <type_traits>
#include <cstring>
#include <deque>
#include <exception>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/staging/slot_registrations.hpp"
#include "protocol/atoms.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/errors.hpp"
#include "staging/local_device_range.hpp"
#include "staging/remote_geometry.hpp"
#include "staging/staged_copy.hpp"

namespace ferry {

namespace {

using clock_type = std::chrono::steady_clock;
using staging::local_stager;

/// The CROSS moves a chunk in pieces of the chunked path's size.
constexpr uint64_t cross_piece = 512 * 1024;

uint64_t fresh_nonce() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t n = 0;
  while (n == 0)
    n = rng();
  return n;
}

class requester_session {
public:
  requester_session(caf::actor_system& sys, const remote_stager_params& p,
                    const remote_stage_request& req)
    : self_(sys), p_(p), req_(req), api_(p.stager->api()) {}

  ~requester_session() {
    if (finished_)
      return;
    try { // run() never ran to its cleanup: it runs now
      finish(make_error(caf::sec::runtime_error, "the session was destroyed unfinished"));
    } catch (...) {
    }
  }

  remote_stage_outcome run() {
    auto err = steps();
    return finish(std::move(err));
  }

  /// After an exception escaped run(): the cleanup (unless it was the
  /// cleanup that threw) and a failed outcome naming it.
  remote_stage_outcome after_exception(const char* what) {
    auto err = make_error(caf::sec::runtime_error,
                          std::string{"remote staging session: an exception: "} + what);
    if (!finished_)
      return finish(std::move(err));
    remote_stage_outcome out;
    out.error = std::move(err);
    out.effect = effect_;
    return out;
  }

private:
  caf::error steps() {
    if (auto err = check_deadline()) // (also: the node is stopping)
      return err;
    if (auto err = prepare())
      return err;
    if (auto err = pin())
      return err;
    if (p_.step_hook)
      p_.step_hook("pinned");
    return req_.direction == stage_direction::read ? run_read() : run_write();
  }

  /// The session's end, however it went: the local copies drain, Unpin
  /// goes (the source drains its own), the registrations retire, and every
  /// chunk and loan goes back that may (below). Once only; a step that
  /// throws skips none of the others (its exception is the session's error).
  remote_stage_outcome finish(caf::error err) {
    finished_ = true;
    if (p_.step_hook)
      guarded(err, [&] { p_.step_hook("finishing"); });
    guarded(err, [&] { settle_crossings(); });
    bool drained = false;
    guarded(err, [&] {
      auto first = drain_local();
      drained = true;
      return first;
    });
    if (!drained) // it threw: a copy it did not reach may still run
      for (auto& s : local_)
        if (s.state == local_slot::copying)
          s.copied = false;
    if (pinned_)
      guarded(err, [&] { return unpin(); });
    bool confirmed = all_copies_confirmed(); // else a copy may still touch the range
    guarded(err, [&] { give_back_slots(); });
    if (local_loan_ != 0 && confirmed)
      p_.exposures->give_back(std::exchange(local_loan_, 0));
    remote_stage_outcome out;
    if (err) {
      out.error = std::move(err);
      out.effect = effect_;
      return out;
    }
    out.completed = req_.length;
    return out;
  }

  /// Runs one step of the end; its error (if it returns one), or an
  /// exception it threw, is the session's error unless one came before.
  template <class Step>
  static void guarded(caf::error& err, Step step) {
    caf::error got;
    try {
      if constexpr (std::is_void_v<decltype(step())>)
        step();
      else
        got = step();
    } catch (const std::exception& e) {
      got = make_error(caf::sec::runtime_error,
                       std::string{"remote staging session: an exception while ending: "}
                         + e.what());
    }
    if (!err)
      err = std::move(got);
  }

private:
  struct local_slot {
    local_stager::chunk_loan loan;
    enum { free, copying, ready } state = free;
    uint32_t chunk = 0;
    bool copied = true; // every copy of it confirmed (else it stays retained)
    slot_landing landing; // a READ's GETs land here (UCX CROSS)
  };

  bool all_copies_confirmed() const {
    return std::all_of(local_.begin(), local_.end(),
                       [](const local_slot& s) { return s.copied; });
  }

  // -- setup --------------------------------------------------------------

  caf::error prepare() {
    if (req_.length == 0)
      return make_error(errc::invalid_argument, "a remote staging request of zero bytes");
    if (!req_.source)
      return make_error(errc::unknown_owner, "no staging source for the range's node");
    if (auto err = staging::local_device_range_error(api_, req_.local, req_.length))
      return err;
    if (p_.exposures) { // the range is this session's alone
      auto loan = p_.exposures->lend_local(req_.device, req_.local, req_.length);
      if (!loan)
        return std::move(loan.error());
      local_loan_ = *loan;
    }
    local_chunk_ = p_.stager->config().chunk_size;
    auto width = staging::ring_width(p_.depth, p_.depth,
                                     staging::chunks_of(req_.length, local_chunk_));
    auto loans = p_.stager->borrow(req_.device, width);
    if (!loans)
      return std::move(loans.error());
    for (auto& l : *loans) {
      local_.emplace_back();
      local_.back().loan = l;
    }
    // (A self-peer session has no endpoint to GET through: CAF requests.)
    // GETs go only to the source's own node, as its hello registered it.
    ask_ucx_ = static_cast<bool>(p_.ucx) && req_.range.source_worker != p_.worker_id
               && p_.ucx.reaches(req_.range.source_worker, req_.source.node());
    if (ask_ucx_ && req_.direction == stage_direction::write) {
      // The source GETs each chunk from our slot: register the ring.
      std::vector<slot_memory> slots;
      for (auto& s : local_)
        slots.push_back({s.loan.chunk->data(), s.loan.chunk->bytes});
      auto regs = slot_registrations::make(self_->system(), p_.ucx, slots, p_.request_timeout);
      if (regs)
        registrations_ = std::move(*regs);
      else
        ask_ucx_ = false; // (the budget) the CROSS goes by CAF
    }
    return {};
  }

  /// The UCX CROSS's registrations retire, then each chunk goes back: one
  /// whose copy did not confirm or whose registration did not unmap stays
  /// retained; one a GET may still write (abandoned) goes back once the
  /// engine lets the GET go.
  void give_back_slots() {
    auto unmapped = registrations_.retire(p_.request_timeout / 2);
    for (size_t i = 0; i < local_.size(); ++i) {
      auto& s = local_[i];
      bool fit = s.copied && (i >= unmapped.size() || unmapped[i]);
      if (fit && cross_ == stage_cross_mode::ucx_get
          && !s.landing.quiet(std::chrono::milliseconds{200})) {
        s.landing.when_quiet([stager = p_.stager, loan = s.loan] { stager->give_back(loan, true); });
        continue;
      }
      p_.stager->give_back(s.loan, fit);
    }
    local_.clear();
  }

  /// The Pin reply's CROSS: what we asked for or CAF, and for a READ over
  /// UCX one plausible key per source slot.
  caf::error accept_cross(const stage_pin_reply& reply) {
    if (reply.cross == static_cast<uint8_t>(stage_cross_mode::caf))
      return {};
    if (reply.cross != static_cast<uint8_t>(stage_cross_mode::ucx_get) || !ask_ucx_)
      return make_error(errc::protocol_violation, "the Pin reply names a CROSS not asked for");
    if (req_.direction == stage_direction::read) {
      if (reply.slots.size() != reply.ring
          || !std::all_of(reply.slots.begin(), reply.slots.end(),
                          [](const stage_slot_key& k) { return k.plausible(); }))
        return make_error(errc::protocol_violation, "the Pin reply's slot keys are out of bounds");
      source_slots_ = reply.slots;
    }
    cross_ = stage_cross_mode::ucx_get;
    p_.stats->ucx_sessions.fetch_add(1);
    return {};
  }

  caf::error pin() {
    stage_pin pin;
    pin.nonce = nonce_ = fresh_nonce();
    pin.registration = req_.range.registration;
    pin.epoch = req_.range.epoch;
    pin.offset = req_.offset;
    pin.length = req_.length;
    pin.direction = static_cast<uint8_t>(req_.direction);
    pin.chunk_size = local_chunk_;
    pin.depth = p_.depth;
    pin.cross = static_cast<uint8_t>(ask_ucx_ ? stage_cross_mode::ucx_get : stage_cross_mode::caf);
    pin.requester_worker = p_.worker_id;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(req_.deadline
                                                                      - clock_type::now());
    if (left.count() <= 0)
      return make_error(errc::timeout, "the remote staging request's deadline passed");
    pin.budget_ms = static_cast<uint32_t>(std::min<int64_t>(left.count(), UINT32_MAX));
    auto reply = ask<stage_pin_reply>(req_.source, stage_pin_atom::value, pin);
    if (!reply)
      return std::move(reply.error());
    session_ = reply->session;
    pinned_ = static_cast<bool>(session_); // from here on, Unpin ends it
    if (!session_ || reply->chunk_size < staging::min_remote_chunk
        || reply->chunk_size > local_chunk_ || reply->ring == 0
        || reply->ring > staging::max_pipeline_depth
        || !staging::chunk_count_fits(req_.length, reply->chunk_size))
      return make_error(errc::protocol_violation, "the source's Pin reply is out of bounds");
    chunk_ = reply->chunk_size;
    ring_ = reply->ring;
    chunks_ = staging::chunks_of(req_.length, chunk_);
    return accept_cross(*reply);
  }

  // -- calls to the source ------------------------------------------------

  /// One call, bounded by the request timeout and the deadline. Unpin, the
  /// session's cleanup, is sent even after the deadline (so the source
  /// drains and ends at once), and waited for until half a request timeout
  /// past it: the shard's answer must still come within the caller's bound.
  caf::expected<std::chrono::milliseconds> call_bound() const {
    auto until = unpinning_ ? req_.deadline + p_.request_timeout / 2 : req_.deadline;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
    if (unpinning_) // sent in any case: the source then drains and ends at once
      left = std::max(left, std::chrono::milliseconds{100});
    if (left.count() <= 0)
      return make_error(errc::timeout, "the remote staging request's deadline passed");
    return std::min(left, p_.request_timeout);
  }

  /// A failed call's error, CAF's timeout named as ferry's.
  static caf::error call_error(caf::error e) {
    if (e == caf::sec::request_timeout)
      return make_error(errc::timeout, "the source did not answer in time");
    return e;
  }

  template <class R, class... Ts>
  caf::expected<R> ask(const caf::actor& to, Ts&&... xs) {
    auto bound = call_bound();
    if (!bound)
      return std::move(bound.error());
    caf::expected<R> out{make_error(errc::timeout, "no answer from the source")};
    receive_answer(self_->request(to, *bound, std::forward<Ts>(xs)...),
                   [&](R& r) { out = std::move(r); },
                   [&](caf::error& e) { out = call_error(std::move(e)); });
    return out;
  }

  /// Waits for a request's answer (bounded by its request), then cancels
  /// its timeout (forget_timeout).
  template <class Answer, class OnValue, class OnError>
  void receive_answer(Answer answer, OnValue on_value, OnError on_error) {
    auto id = answer.id();
    answer.receive(std::move(on_value), std::move(on_error));
    forget_timeout(id);
  }

  /// CAF 0.17 keeps an answered request's timeout armed: when it fires, a
  /// stale timeout message lands in this actor's mailbox, and every later
  /// receive walks past it. A session outliving the request timeout would
  /// slow down as they pile up, so an answered request's timeout goes.
  void forget_timeout(caf::message_id answered) {
    self_->home_system().clock().cancel_request_timeout(self_.ptr(), answered);
  }

  stage_frame frame(stage_phase phase, uint32_t chunk) const {
    stage_frame f;
    f.nonce = nonce_;
    f.registration = req_.range.registration;
    f.phase = static_cast<uint8_t>(phase);
    f.chunk = chunk;
    if (phase == stage_phase::unpin) {
      f.length = req_.length;
    } else {
      auto s = staging::span_of(req_.length, chunk_, chunk);
      f.offset = s.offset;
      f.length = s.length;
    }
    return f;
  }

  /// A receipt must echo the frame it answers.
  template <class Atom>
  caf::error call(Atom atom, const stage_frame& f) {
    auto echo = ask<stage_frame>(session_, atom, f);
    if (!echo)
      return std::move(echo.error());
    if (!(*echo == f))
      return make_error(errc::protocol_violation, "a receipt names another scope");
    return {};
  }

  caf::error delegate(uint32_t chunk) {
    if (req_.direction == stage_direction::write)
      effect_ = remote_effect::unknown; // before it is sent: it may run
    return call(stage_delegate_atom::value, frame(stage_phase::delegate, chunk));
  }

  /// QueryDelegate: complete or pending.
  caf::expected<bool> query(uint32_t chunk) {
    auto f = frame(stage_phase::delegate, chunk);
    auto bound = call_bound();
    if (!bound)
      return std::move(bound.error());
    caf::expected<bool> out{make_error(errc::timeout, "no answer from the source")};
    receive_answer(
      self_->request(session_, *bound, stage_query_atom::value, f),
      [&](stage_frame& echo, bool complete) {
        if (echo == f)
          out = complete;
        else
          out = make_error(errc::protocol_violation, "a receipt names another scope");
      },
      [&](caf::error& e) { out = call_error(std::move(e)); });
    return out;
  }

  // -- the CROSS window ---------------------------------------------------

  /// One CROSS admitted and not yet finished. Over UCX its answer comes
  /// later: a READ's GET of the source's slot into ours, or the source's
  /// answer to a WRITE's CROSS (after its GET of our slot). Over CAF it ran
  /// whole when admitted (no answer to wait for).
  struct crossing {
    uint32_t chunk = 0;
    std::optional<caf::message_id> answer;
    bool get = false; // the answer is our GET's (READ), not the source's
  };

  /// How many CROSSes may be in flight at once: over UCX as many as both
  /// rings allow (each holds its own local and source slot; at most 16),
  /// over CAF one (a single connection).
  uint32_t window() const {
    if (cross_ != stage_cross_mode::ucx_get)
      return 1;
    return std::min<uint32_t>(
      {ring_, static_cast<uint32_t>(local_.size()), staging::max_pipeline_depth});
  }

  /// Admits `chunk`'s CROSS into the window.
  caf::error start_cross(uint32_t chunk, local_slot& slot) {
    auto f = frame(stage_phase::cross, chunk);
    crossing c;
    c.chunk = chunk;
    if (cross_ != stage_cross_mode::ucx_get) {
      if (auto err = cross_by_caf(f, slot))
        return err;
    } else {
      auto bound = call_bound();
      if (!bound)
        return std::move(bound.error());
      if (req_.direction == stage_direction::read) {
        c.answer = request_slot_get(self_, p_.ucx.engine, req_.range.source_worker,
                                    source_slots_[chunk % ring_], f.length, slot.landing,
                                    slot.loan.chunk->data(), *bound)
                     .id();
        c.get = true;
      } else {
        c.answer = self_->request(session_, *bound, stage_cross_atom::value, f,
                                  registrations_.key(chunk % local_.size()))
                     .id();
      }
    }
    crossing_.push_back(c);
    remote_staging_stats::raise(p_.stats->max_cross_window, crossing_.size());
    return {};
  }

  /// Whether `c` has answered (and well), waiting for its answer when
  /// `wait` (bounded by its request), else taking it only if it came.
  caf::expected<bool> answered(const crossing& c, bool wait) {
    if (!c.answer)
      return true;
    auto f = frame(stage_phase::cross, c.chunk);
    caf::expected<bool> out{false};
    auto on_error = [&](caf::error& e) {
      out = c.get ? slot_get_error(std::move(e)) : call_error(std::move(e));
    };
    auto on_get = [&](uint64_t) {
      out = true;
      p_.stats->ucx_bytes.fetch_add(f.length);
    };
    auto on_echo = [&](stage_frame& echo) {
      if (echo == f)
        out = true;
      else
        out = make_error(errc::protocol_violation, "a receipt names another scope");
    };
    caf::blocking_actor::accept_one_cond once;
    auto now = caf::after(std::chrono::seconds{0}) >> [] {};
    if (c.get && wait)
      self_->varargs_receive(once, *c.answer, on_get, on_error);
    else if (c.get)
      self_->varargs_receive(once, *c.answer, on_get, on_error, now);
    else if (wait)
      self_->varargs_receive(once, *c.answer, on_echo, on_error);
    else
      self_->varargs_receive(once, *c.answer, on_echo, on_error, now);
    if (!out || *out)
      forget_timeout(*c.answer); // answered
    return out;
  }

  /// The oldest CROSS, once answered, ends with FinishCross; true if it did.
  caf::expected<bool> finish_oldest(bool wait) {
    auto got = answered(crossing_.front(), wait);
    if (got && !*got)
      return false; // not yet
    auto chunk = crossing_.front().chunk;
    crossing_.pop_front(); // answered, well or not: never waited for again
    if (!got)
      return got;
    if (auto err = call(stage_finish_atom::value, frame(stage_phase::cross, chunk)))
      return err;
    return true;
  }

  /// Before Unpin, every CROSS still in flight answers (each within its own
  /// bound): the source never releases a slot a GET still reads.
  void settle_crossings() {
    for (auto& c : crossing_)
      (void) answered(c, true);
    crossing_.clear();
  }

  /// The CROSS over CAF requests, piece by piece, whole.
  caf::error cross_by_caf(const stage_frame& f, local_slot& slot) {
    char* memory = slot.loan.chunk->data();
    for (uint64_t at = 0; at < f.length; at += cross_piece) {
      auto n = std::min(cross_piece, f.length - at);
      if (req_.direction == stage_direction::read) {
        auto bytes = ask<chunk_bytes>(session_, stage_cross_atom::value, f, at, n);
        if (!bytes)
          return std::move(bytes.error());
        if (bytes->size() != n)
          return make_error(errc::protocol_violation, "a CROSS piece of the wrong size");
        std::memcpy(memory + at, bytes->data(), n);
      } else {
        // A copy, not a view of the slot: CAF may serialize the message
        // after this session gave the chunk back.
        char* out = nullptr;
        auto piece = chunk_bytes::allocate(n, &out);
        std::memcpy(out, memory + at, n);
        auto echo = ask<stage_frame>(session_, stage_cross_atom::value, f, at, piece);
        if (!echo)
          return std::move(echo.error());
        if (!(*echo == f))
          return make_error(errc::protocol_violation, "a receipt names another scope");
      }
    }
    return {};
  }

  caf::error unpin() {
    pinned_ = false;
    unpinning_ = true;
    return call(stage_unpin_atom::value, frame(stage_phase::unpin, 0));
  }

  // -- local copies -------------------------------------------------------

  template <class F>
  caf::error in_context(const local_slot& s, F fn) {
    return staging::in_context(api_, s.loan.ctx, fn);
  }

  /// READ's POST (slot -> device) or WRITE's PRE (device -> slot) of `chunk`.
  caf::error start_local(local_slot& s, uint32_t chunk) {
    auto span = staging::span_of(req_.length, chunk_, chunk);
    auto& c = *s.loan.chunk;
    auto device = req_.local + span.offset;
    s.state = local_slot::copying;
    s.chunk = chunk;
    auto err = in_context(s, [&]() -> caf::error {
      auto copied = req_.direction == stage_direction::read
                      ? api_.copy_to_device(device, c.data(), span.length, c.stream)
                      : api_.copy_to_host(c.data(), device, span.length, c.stream);
      if (copied) {
        s.state = local_slot::free; // nothing was queued
        return copied;
      }
      auto recorded = api_.event_record(c.events[0], c.stream);
      if (recorded)
        s.copied = false; // queued with no event to confirm it: retained
      return recorded;
    });
    return err;
  }

  /// True once the slot's copy completed (the slot is then ready or free).
  caf::expected<bool> local_done(local_slot& s) {
    if (s.state != local_slot::copying)
      return true;
    auto state = staging::query_event_in(api_, s.loan.ctx, s.loan.chunk->events[0]);
    if (!state) {
      s.copied = false;
      return std::move(state.error());
    }
    if (*state != staging::event_state::complete)
      return false;
    auto span = staging::span_of(req_.length, chunk_, s.chunk);
    bool read = req_.direction == stage_direction::read;
    p_.stager->count_copied(!read, span.length);
    s.state = read ? local_slot::free : local_slot::ready;
    return true;
  }

  /// Waits out every local copy still in flight, all within one event
  /// bound (a copy past it keeps its chunk retained).
  caf::error drain_local() {
    caf::error first;
    auto until = clock_type::now() + p_.event_bound;
    for (auto& s : local_) {
      if (s.state != local_slot::copying)
        continue;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until
                                                                        - clock_type::now());
      auto err = in_context(s, [&] {
        return staging::wait_event(api_, s.loan.chunk->events[0],
                                   std::max(left, std::chrono::milliseconds{1}));
      });
      if (err) {
        s.copied = false;
        if (!first)
          first = std::move(err);
      }
      s.state = local_slot::free;
    }
    return first;
  }

  // -- the pipeline -------------------------------------------------------

  /// The deadline, and the node's stop: a stopping node's sessions end at
  /// once (Unpin), instead of holding its stop until their deadlines.
  caf::error check_deadline() const {
    if (p_.stopping && p_.stopping->load())
      return make_error(errc::draining, "the node is stopping: the session ends unfinished");
    if (clock_type::now() >= req_.deadline)
      return make_error(errc::timeout, "the remote staging request's deadline passed");
    return {};
  }

  /// Between sweeps that moved nothing: a short, growing pause.
  void idle(bool progressed) {
    if (progressed) {
      pause_ = std::chrono::microseconds{0};
      return;
    }
    if (pause_.count() == 0)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(pause_);
    pause_ = std::min(std::chrono::microseconds{1000}, pause_ + std::chrono::microseconds{20});
  }

  /// Each sweep advances every local copy (so slots are found ready in
  /// the order they finish, not only the one awaited next).
  caf::error advance_local(bool& progressed) {
    for (auto& s : local_) {
      bool was = s.state == local_slot::copying;
      auto done = local_done(s);
      if (!done)
        return std::move(done.error());
      progressed = progressed || (was && *done);
    }
    return {};
  }

  caf::error run_read() {
    uint32_t next_delegate = 0, next_issue = 0, next_done = 0;
    while (next_delegate < std::min(ring_, chunks_))
      if (auto err = delegate(next_delegate++))
        return err;
    // Source slot r's Delegate (of the next chunk to cross from it) is
    // confirmed complete.
    std::vector<bool> filled(ring_, false);
    auto most = window();
    while (next_done < chunks_) {
      if (auto err = check_deadline())
        return err;
      bool progressed = false;
      // Every Delegate not yet confirmed is queried once per sweep.
      for (auto c = next_issue; c < next_delegate; ++c) {
        if (filled[c % ring_])
          continue;
        auto done = query(c);
        if (!done)
          return std::move(done.error());
        filled[c % ring_] = *done;
        progressed = progressed || *done;
      }
      if (auto err = advance_local(progressed))
        return err;
      // CROSSes are admitted in order while the window has room: the
      // source slot filled, the local slot's previous POST done.
      while (next_issue < chunks_ && next_issue - next_done < most) {
        auto& slot = local_[next_issue % local_.size()];
        if (!filled[next_issue % ring_] || slot.state != local_slot::free)
          break;
        if (auto err = start_cross(next_issue, slot))
          return err;
        filled[next_issue % ring_] = false; // the slot's next Delegate comes later
        ++next_issue;
        progressed = true;
      }
      // The oldest ends (waited for when nothing else moved): FinishCross
      // frees its source slot for the Delegate R chunks on, and its local
      // POST starts.
      if (next_done < next_issue) {
        auto chunk = crossing_.front().chunk;
        auto ended = finish_oldest(!progressed);
        if (!ended)
          return std::move(ended.error());
        if (*ended) {
          if (auto err = start_local(local_[chunk % local_.size()], chunk))
            return err;
          ++next_done;
          progressed = true;
          if (next_delegate < chunks_)
            if (auto err = delegate(next_delegate++))
              return err;
        }
      }
      idle(progressed);
    }
    return finish_local();
  }

  /// Every local copy completed (READ's last POSTs).
  caf::error finish_local() {
    for (;;) {
      if (auto err = check_deadline())
        return err;
      bool all = true;
      for (auto& s : local_) {
        auto done = local_done(s);
        if (!done)
          return std::move(done.error());
        all = all && *done;
      }
      if (all)
        return {};
      idle(false);
    }
  }

  caf::error run_write() {
    uint32_t next_pre = 0, next_issue = 0, next_done = 0;
    while (next_pre < std::min<uint32_t>(static_cast<uint32_t>(local_.size()), chunks_)) {
      if (auto err = start_local(local_[next_pre % local_.size()], next_pre))
        return err;
      ++next_pre;
    }
    // The chunk each source slot's Delegate copies, until it is confirmed.
    std::vector<std::optional<uint32_t>> delegated(ring_);
    auto busy = [&] {
      return std::any_of(delegated.begin(), delegated.end(),
                         [](const auto& c) { return c.has_value(); });
    };
    auto most = window();
    while (next_done < chunks_ || busy()) {
      if (auto err = check_deadline())
        return err;
      bool progressed = false;
      // Every Delegate not yet confirmed is queried once per sweep.
      for (auto& d : delegated) {
        if (!d)
          continue;
        auto done = query(*d);
        if (!done)
          return std::move(done.error());
        if (*done) {
          d.reset();
          progressed = true;
        }
      }
      if (auto err = advance_local(progressed))
        return err;
      // CROSSes are admitted in order while the window has room: the local
      // PRE done, the source slot's previous Delegate confirmed.
      while (next_issue < chunks_ && next_issue - next_done < most) {
        auto& slot = local_[next_issue % local_.size()];
        if (delegated[next_issue % ring_] || slot.state != local_slot::ready
            || slot.chunk != next_issue)
          break;
        if (auto err = start_cross(next_issue, slot))
          return err;
        ++next_issue;
        progressed = true;
      }
      // The oldest ends (waited for when nothing else moved): FinishCross,
      // its Delegate (the remote effect becomes unknown first), and its
      // local slot takes the PRE L chunks on.
      if (next_done < next_issue) {
        auto chunk = crossing_.front().chunk;
        auto ended = finish_oldest(!progressed);
        if (!ended)
          return std::move(ended.error());
        if (*ended) {
          if (auto err = delegate(chunk))
            return err;
          delegated[chunk % ring_] = chunk;
          auto& slot = local_[chunk % local_.size()];
          slot.state = local_slot::free;
          ++next_done;
          progressed = true;
          if (next_pre < chunks_) {
            if (auto err = start_local(slot, next_pre))
              return err;
            ++next_pre;
          }
        }
      }
      idle(progressed);
    }
    return {};
  }

  caf::scoped_actor self_;
  const remote_stager_params& p_;
  const remote_stage_request& req_;
  staging::cuda_api& api_;
  std::vector<local_slot> local_;
  uint64_t local_chunk_ = 0;
  uint64_t nonce_ = 0;
  caf::actor session_;
  bool pinned_ = false;
  bool unpinning_ = false;
  uint64_t chunk_ = 0;
  uint32_t ring_ = 1;
  uint32_t chunks_ = 0;
  remote_effect effect_ = remote_effect::none;
  std::chrono::microseconds pause_{0};
  bool finished_ = false;
  // The CROSS over UCX: asked for, agreed, the source's slots (READ), our
  // slots' registrations (WRITE).
  uint64_t local_loan_ = 0; // our exclusive loan on the local range
  bool ask_ucx_ = false;
  stage_cross_mode cross_ = stage_cross_mode::caf;
  std::vector<stage_slot_key> source_slots_;
  slot_registrations registrations_;
  std::deque<crossing> crossing_; // the CROSS window, oldest first
};

} // namespace

remote_stage_outcome run_requester_session(caf::actor_system& sys,
                                           const remote_stager_params& p,
                                           const remote_stage_request& req) {
  requester_session session{sys, p, req};
  try {
    return session.run();
  } catch (const std::exception& e) {
    return session.after_exception(e.what());
  } catch (...) {
    return session.after_exception("not a std::exception");
  }
}

} // namespace ferry
