#include "actors/rdma/ucx_engine.hpp"

#include <algorithm>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "actors/rdma/get_fences.hpp"
#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rdma/ucx_control_channel.hpp"
#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"
#include "rdma/endpoint_activity.hpp"
#include "rdma/poll_policy.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_get.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry {

namespace {

using clock_type = std::chrono::steady_clock;

struct pending_get {
  // Members go in reverse order: the request first (its destructor may
  // still progress the worker), then the key, the destination last.
  pinned_ptr dest; // held until UCX is done with it
  ucx_remote_key key;
  ucx_get_request request;
  uint64_t worker_id = 0;
  uint64_t seq = 0; // in the order GETs were posted (fences wait by it)
  caf::response_promise rp;
  clock_type::time_point started;
  clock_type::time_point deadline;
  std::optional<clock_type::time_point> done_at; // completed, reply held (hook)
  caf::error failure;
};

/// A closely polled GET goes to sleeping waits once UCX moved nothing for
/// this long (a dead or stalled peer's GET never moves again).
constexpr auto spin_window = std::chrono::milliseconds{50};
/// How often abandoned GETs are looked at when nothing else runs.
constexpr auto abandoned_poll = std::chrono::milliseconds{100};
/// ... and while an owner's fence waits for them (its quarantined blocks
/// go when they end): each fragment of an emulated GET needs a progress.
constexpr auto fenced_poll = std::chrono::milliseconds{5};
/// The longest an eager endpoint's wireup is waited on (progressed for).
constexpr auto eager_wireup_limit = std::chrono::seconds{5};
/// The longest an idle or goodbye close waits for UCX (nothing is in
/// flight on such an endpoint).
constexpr auto quiet_close_limit = std::chrono::milliseconds{200};

struct engine {
  std::shared_ptr<const ucx_context> context;
  // Destinations lent to UCX past the requests' release at teardown, and
  // blocks forced out of the owner's quarantine whose endpoint close did
  // not finish: kept until after the worker (declared before it, so
  // destroyed after it).
  std::vector<pinned_ptr> lent;
  ucx_worker worker;
  ucx_engine_faults faults;
  std::chrono::milliseconds get_timeout;
  rdma_metrics* metrics = nullptr;
  std::map<uint64_t, std::vector<char>> addresses;
  std::set<uint64_t> reporting_peers; // endpoints with failure reports
  std::map<uint64_t, ucx_endpoint> endpoints;
  // Endpoints of peers that went while abandoned GETs still used them.
  std::list<std::pair<uint64_t, ucx_endpoint>> retired;
  std::list<pending_get> gets;
  std::list<pending_get> abandoned; // answered; UCX still owns the destination
  int64_t holds = 0;
  bool running = true;
  rkey_cache<ucx_remote_key> rkeys;
  bool cache_rkeys = true;
  std::shared_ptr<warm_destination> warm;
  clock_type::time_point last_motion = clock_type::now();
  // While a control-channel answer is due: poll, or sleep on the event fd.
  poll_policy channel_poll;
  // -- endpoint lifecycle ---------------------------------------------------
  uint64_t own_worker_id = 0;
  bool eager = false;
  endpoint_activity activity{std::nullopt};
  std::map<uint64_t, caf::actor> gateways{}; // where a goodbye to a peer goes
  std::map<uint64_t, clock_type::time_point> wireups{}; // eager, until
  uint64_t endpoints_created = 0;
  uint64_t eager_wireups_done = 0;
  uint64_t closed_by[5] = {0, 0, 0, 0, 0}; // by endpoint_close_reason
  // -- fences: owners waiting until our GETs to them ended -------------------
  clock_type::time_point serve_from{}; // the serve_delay fault hook
  uint64_t last_get = 0; // GETs are numbered as they are posted
  get_fences fences;
  // The control channel (null when off); declared last, destroyed first:
  // its inbox's handler goes before the endpoints and the worker.
  std::unique_ptr<ucx_control_channel> control{};

  /// The control channel's sends: the endpoint to `peer` (opened when
  /// needed), its idle clock restarted.
  ucp_ep_h control_endpoint(uint64_t peer, std::string& why) {
    auto* ep = endpoint_for(peer, why);
    if (ep == nullptr)
      return nullptr;
    auto now = clock_type::now(); // an operation of its own: GETs' counts stay
    activity.started(peer, now);
    activity.finished(peer, now);
    return ep->native();
  }

  /// Open endpoints that run with UCX failure reports.
  uint64_t reporting_endpoints() const {
    uint64_t n = 0;
    for (const auto& [id, ep] : endpoints)
      n += ep.error_mode() == ucx_error_mode::peer ? 1 : 0;
    return n;
  }

  void count_close(endpoint_close_reason why) {
    ++closed_by[static_cast<int>(why)];
    if (metrics && metrics->endpoints_closed[static_cast<int>(why)])
      metrics->endpoints_closed[static_cast<int>(why)]->Increment();
  }

  /// A hello from a peer (a new incarnation, or the same one again): its
  /// endpoint and every key unpacked on it go; the next GET (or, eager,
  /// this call) wires up afresh.
  void set_address(uint64_t worker_id, std::vector<char> address, caf::actor gateway,
                   bool failure_reports) {
    if (gateway)
      gateways[worker_id] = std::move(gateway);
    addresses[worker_id] = std::move(address);
    if (failure_reports)
      reporting_peers.insert(worker_id);
    else
      reporting_peers.erase(worker_id);
    rkeys.invalidate_peer(worker_id);
    abandon_peer(worker_id, "the peer's UCX address changed");
    retire_endpoint(worker_id, endpoint_close_reason::peer_down);
    if (eager)
      wire_up_eagerly(worker_id);
  }

  /// The peer went away: its keys, its GETs and its endpoint go.
  void forget(uint64_t worker_id) {
    if (control)
      control->remove_peer(worker_id);
    rkeys.invalidate_peer(worker_id);
    abandon_peer(worker_id, "the peer went away");
    retire_endpoint(worker_id, endpoint_close_reason::peer_down);
    gateways.erase(worker_id); // a new hello brings it (and an address) again
    addresses.erase(worker_id); // no GET wires up to a peer known gone
    reporting_peers.erase(worker_id);
  }

  /// Eager wireup: the endpoint now, and the worker progressed until its
  /// flush says the wireup is done (bounded). A failure leaves the first
  /// GET to wire up lazily.
  void wire_up_eagerly(uint64_t worker_id) {
    std::string why;
    auto* ep = endpoint_for(worker_id, why);
    if (ep == nullptr) {
      spdlog::debug("eager wireup to worker {:016x}: {}", worker_id, why);
      return;
    }
    if (ep->start_flush())
      wireups[worker_id] = clock_type::now() + eager_wireup_limit;
  }

  /// Eager wireups that finished (or ran out of time) stop being waited on.
  void check_wireups() {
    auto now = clock_type::now();
    for (auto i = wireups.begin(); i != wireups.end();) {
      auto ep = endpoints.find(i->first);
      if (ep == endpoints.end()) {
        i = wireups.erase(i);
        continue;
      }
      if (ep->second.flush_pending() && now < i->second) {
        ++i;
        continue;
      }
      if (!ep->second.flush_pending()) {
        ++eager_wireups_done;
        spdlog::debug("eager wireup to worker {:016x} done", i->first);
      }
      i = wireups.erase(i);
    }
  }

  /// The idle reaper: every endpoint unused for the timeout closes, after a
  /// goodbye to the peer so that it drops its own endpoint back to us.
  void reap_idle(caf::blocking_actor* self) {
    auto now = clock_type::now();
    if (!activity.scan_due(now))
      return;
    for (auto peer : activity.scan(now, holds > 0)) {
      if (auto g = gateways.find(peer); g != gateways.end() && g->second)
        self->send(g->second, ucx_goodbye_atom::value, own_worker_id);
      spdlog::debug("UCX endpoint to worker {:016x} idle for {} ms: closed", peer,
                    activity.timeout().count());
      retire_endpoint(peer, endpoint_close_reason::idle);
    }
  }

  /// The peer closed its endpoint to us: ours goes too, once nothing runs
  /// on it (the next GET wires up a fresh pair).
  void on_goodbye(uint64_t worker_id) {
    if (activity.goodbye(worker_id))
      retire_endpoint(worker_id, endpoint_close_reason::goodbye);
  }

  void close_goodbyes_ready() {
    for (auto peer : activity.goodbye_ready())
      retire_endpoint(peer, endpoint_close_reason::goodbye);
  }

  /// An operation on the peer's endpoint ended: its idle clock restarts.
  void finished(uint64_t worker_id) {
    activity.finished(worker_id, clock_type::now());
    close_goodbyes_ready();
  }

  bool uses(const std::list<pending_get>& list, uint64_t worker_id) const {
    for (auto& g : list)
      if (g.worker_id == worker_id)
        return true;
    return false;
  }

  /// Closes the peer's endpoint now, or once no abandoned GET uses it; its
  /// unpacked keys go with it. True when it closed now and UCX finished
  /// the close (no request can be served on it any more).
  bool retire_endpoint(uint64_t worker_id, endpoint_close_reason why) {
    auto i = endpoints.find(worker_id);
    if (i == endpoints.end())
      return false;
    rkeys.invalidate_peer(worker_id);
    wireups.erase(worker_id);
    bool finished = false;
    if (uses(abandoned, worker_id))
      retired.emplace_back(worker_id, std::move(i->second));
    else if (why == endpoint_close_reason::peer_down)
      i->second.close(std::chrono::milliseconds{50}); // a dead peer: no flush wait
    else
      finished = i->second.close(quiet_close_limit).ok();
    endpoints.erase(i);
    activity.closed(worker_id);
    count_close(why);
    update_gauge();
    return finished;
  }

  /// Whether a GET to `worker_id` numbered at most `up_to` still runs.
  bool runs_before(uint64_t worker_id, uint64_t up_to) const {
    for (const auto* list : {&gets, &abandoned})
      for (const auto& g : *list)
        if (g.worker_id == worker_id && g.seq <= up_to)
          return true;
    return false;
  }

  get_fences::runs_fn runs_fn() const {
    return [this](uint64_t w, uint64_t up_to) { return runs_before(w, up_to); };
  }

  /// An owner's fence: answered once our GETs to it so far have ended.
  void fence(caf::blocking_actor* self, uint64_t worker_id) {
    fences.add(worker_id, last_get, self->make_response_promise(), runs_fn(),
               clock_type::now());
  }

  /// The owner forced a block out of its quarantine: our endpoints to the
  /// peers that may still read it close first (with a goodbye, so each
  /// drops its own back and its next GET wires up a fresh pair). The block
  /// goes once every such close finished; one that did not (UCX goes on
  /// with it), or one deferred behind our own abandoned GETs, keeps it
  /// until the worker goes. A peer with no endpoint of ours is served on
  /// the one UCX made for its wireup, which ferry cannot close
  /// (docs/known-issues.md): the block goes.
  void retire_for_quarantine(caf::blocking_actor* self, const std::vector<uint64_t>& peers,
                             pinned_ptr block) {
    bool keep = false;
    for (auto peer : peers) {
      if (auto g = gateways.find(peer); g != gateways.end() && g->second)
        self->send(g->second, ucx_goodbye_atom::value, own_worker_id);
      bool open = endpoints.count(peer) > 0;
      bool deferred = std::any_of(retired.begin(), retired.end(),
                                  [&](const auto& r) { return r.first == peer; });
      if (open && !retire_endpoint(peer, endpoint_close_reason::quarantine))
        keep = true; // deferred, or its close did not finish
      else if (deferred)
        keep = true;
    }
    if (keep)
      lent.push_back(std::move(block));
  }

  void close_unused_retired() {
    for (auto i = retired.begin(); i != retired.end();) {
      if (uses(abandoned, i->first)) {
        ++i;
        continue;
      }
      i->second.close(std::chrono::milliseconds{50});
      i = retired.erase(i);
    }
  }

  void update_gauge() {
    if (metrics && metrics->abandoned_gets)
      metrics->abandoned_gets->Set(static_cast<double>(abandoned.size()));
    if (metrics && metrics->ucx_endpoints)
      metrics->ucx_endpoints->Set(static_cast<double>(endpoints.size() + retired.size()));
  }

  /// Answers `g` get_failed and keeps it (with its destination) until UCX
  /// finishes it; a GET that finished meanwhile is simply dropped.
  void abandon(std::list<pending_get>::iterator i, std::string why) {
    auto& g = *i;
    spdlog::warn("UCX GET from worker {:016x} given up: {}", g.worker_id, why);
    if (g.done_at && g.failure)
      g.rp.deliver(g.failure);
    else if (g.request.pending())
      g.rp.deliver(make_error(errc::get_abandoned, std::move(why)));
    else
      g.rp.deliver(make_error(errc::get_failed, std::move(why)));
    if (g.request.pending()) {
      abandoned.splice(abandoned.end(), gets, i); // still outstanding
    } else {
      auto peer = g.worker_id;
      gets.erase(i);
      finished(peer);
    }
    update_gauge();
  }

  void abandon_peer(uint64_t worker_id, const std::string& why) {
    for (auto i = gets.begin(); i != gets.end();) {
      auto next = std::next(i);
      if (i->worker_id == worker_id)
        abandon(i, why);
      i = next;
    }
  }

  /// The key for a GET: from the cache when `generation` is known and the
  /// same (peer, generation, packed key) was unpacked on this endpoint
  /// before, else unpacked (and cached when `generation` is known).
  ucx_result<ucx_remote_key> key_for(ucx_endpoint& ep, uint64_t worker_id,
                                     std::optional<uint64_t> generation,
                                     const std::vector<uint8_t>& rkey, uint64_t len) {
    if (!generation || !cache_rkeys)
      return ep.unpack_rkey(rkey);
    rkey_cache_key k{worker_id, *generation, rkey};
    auto usable = [&ep](const ucx_remote_key& key) { return key.belongs_to(ep); };
    if (auto* hit = rkeys.find(k, len, usable))
      return hit->clone();
    auto key = ep.unpack_rkey(rkey);
    if (!key)
      return key;
    rkeys.insert(std::move(k), key->clone(), len);
    return key;
  }

  ucx_endpoint* endpoint_for(uint64_t worker_id, std::string& why) {
    if (auto i = endpoints.find(worker_id); i != endpoints.end()) {
      if (i->second.failure() == UCS_OK)
        return &i->second;
      // UCX reported it failed (its peer seemed gone): a fresh one, should
      // the peer still be there.
      retire_endpoint(worker_id, endpoint_close_reason::peer_down);
    }
    auto a = addresses.find(worker_id);
    if (a == addresses.end()) {
      why = "no UCX address for worker " + std::to_string(worker_id);
      return nullptr;
    }
    // Failure reports on every endpoint but a shared-memory pair's
    // (rdma/failure_reports_choice.hpp).
    ucx_endpoint_config cfg;
    if (reporting_peers.count(worker_id) > 0)
      cfg.error_mode = ucx_error_mode::peer;
    auto ep = ucx_endpoint::connect(worker, a->second, cfg);
    if (!ep) {
      why = ep.error_message();
      return nullptr;
    }
    // Idle time starts when ucp_ep_create returned.
    activity.opened(worker_id, clock_type::now());
    ++endpoints_created;
    auto* out = &endpoints.emplace(worker_id, std::move(*ep)).first->second;
    update_gauge();
    return out;
  }

  void start_get(caf::blocking_actor* self, uint64_t worker_id,
                 std::optional<uint64_t> generation, uint64_t addr, uint64_t len,
                 const std::vector<uint8_t>& rkey, pinned_ptr dest) {
    pending_get g;
    g.rp = self->make_response_promise();
    g.started = clock_type::now();
    g.deadline = g.started + get_timeout;
    g.worker_id = worker_id;
    g.seq = ++last_get;
    g.dest = std::move(dest);
    auto fail = [&](std::string why) {
      g.rp.deliver(make_error(errc::get_failed, std::move(why)));
    };
#ifdef FERRY_TEST_HOOKS
    if (faults.fail_gets)
      return fail("fault hook: GET failed");
#endif
    if (!g.dest || g.dest->size() < len)
      return fail("destination smaller than the GET");
    std::string why;
    auto* ep = endpoint_for(worker_id, why);
    if (ep == nullptr)
      return fail(why);
    auto key = key_for(*ep, worker_id, generation, rkey, len);
    if (!key)
      return fail("rkey: " + key.error_message());
    g.key = std::move(*key);
    auto req = post_get(worker, *ep, g.key, addr, g.dest->data(), len);
    if (!req) {
      if (generation) // do not keep a key that did not post
        rkeys.erase(rkey_cache_key{worker_id, *generation, rkey});
      return fail("post: " + req.error_message());
    }
    g.request = std::move(*req);
    activity.started(worker_id, clock_type::now());
    gets.push_back(std::move(g));
    last_motion = clock_type::now();
  }

  /// Completes what UCX finished and abandons what passed its deadline;
  /// returns true when something changed.
  bool reap_gets() {
    bool changed = false;
    auto now = clock_type::now();
    for (auto i = gets.begin(); i != gets.end();) {
      auto& g = *i;
      if (!g.done_at) {
        auto r = g.request.test();
        if (r.state == ucx_get_state::in_progress) {
          auto next = std::next(i);
          if (now >= g.deadline) {
            abandon(i, "GET did not finish within "
                         + std::to_string(get_timeout.count()) + " ms");
            changed = true;
          }
          i = next;
          continue;
        }
        if (!r.ok())
          g.failure = make_error(errc::get_failed, r.error);
        else
          spdlog::debug("UCX GET from worker {:016x}: UCX finished it", g.worker_id);
        g.done_at = now;
        changed = true;
      }
      if (*g.done_at + faults.get_delay > now) {
        ++i;
        continue;
      }
      if (g.failure) {
        g.rp.deliver(g.failure);
      } else {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
          *g.done_at - g.started);
        g.rp.deliver(static_cast<uint64_t>(ns.count()));
      }
      auto peer = g.worker_id;
      i = gets.erase(i);
      finished(peer);
      changed = true;
    }
    return changed;
  }

  /// The registered bytes abandoned GETs' destinations hold (UCX still
  /// owns them).
  uint64_t abandoned_bytes() const {
    uint64_t n = 0;
    for (const auto& g : abandoned)
      n += g.dest ? g.dest->size() : 0;
    return n;
  }

  /// Drops abandoned GETs that UCX finished at last (their destinations
  /// return), and closes endpoints they kept open.
  void reap_abandoned() {
    bool changed = false;
    for (auto i = abandoned.begin(); i != abandoned.end();) {
      if (i->request.test().state == ucx_get_state::in_progress) {
        ++i;
        continue;
      }
      auto peer = i->worker_id;
      i = abandoned.erase(i);
      finished(peer);
      changed = true;
    }
    if (changed) {
      close_unused_retired();
      update_gauge();
    }
  }

  /// Our descriptors out make peers' emulated GETs need our progress.
  bool serving() const { return holds > 0 && !faults.no_progress && !serve_delayed(); }
  /// The serve_delay fault hook holds peers' GETs back (tests only).
  bool serve_delayed() const {
#ifdef FERRY_TEST_HOOKS
    return clock_type::now() < serve_from;
#else
    return false;
#endif
  }
  bool busy() const { return !gets.empty() || serving() || !wireups.empty(); }
  /// The control channel has peers or calls out: UCX's events must wake
  /// the engine, so it sleeps on the worker's event fd, not its mailbox.
  bool listening() const { return control && control->active(); }

  /// How long an idle engine may sleep on its mailbox.
  std::chrono::milliseconds idle_sleep() const {
    auto sleep = abandoned.empty() ? std::chrono::milliseconds{1000}
                 : fences.empty()  ? abandoned_poll
                                   : fenced_poll;
    if (holds > 0 && serve_delayed()) // wake when serving resumes
      sleep = std::min(sleep, std::chrono::ceil<std::chrono::milliseconds>(
                                serve_from - clock_type::now()));
    if (activity.reaping() && activity.open() > 0) {
      auto until = std::chrono::ceil<std::chrono::milliseconds>(activity.next_scan()
                                                                - clock_type::now());
      sleep = std::clamp(until, std::chrono::milliseconds{1}, sleep);
    }
    return sleep;
  }

  /// How long an idle engine that listens may sleep on the event fd: until
  /// the next call expires, at most as long as on its mailbox (a message
  /// sent without a wake() waits that long at worst).
  std::chrono::milliseconds listening_sleep() const {
    auto sleep = std::min(idle_sleep(), std::chrono::milliseconds{200});
    if (auto next = control->next_deadline()) {
      auto until = std::chrono::ceil<std::chrono::milliseconds>(*next - clock_type::now());
      sleep = std::clamp(until, std::chrono::milliseconds{1}, sleep);
    }
    return sleep;
  }

  /// Sleeps on the worker's event fd for at most `max`. UCX refusing the
  /// sleep with nothing to move, many times in a row, means a peer on this
  /// machine needs the core this loop spins on: then it naps instead
  /// (rdma/poll_policy.hpp; docs/performance.md, "The control channel
  /// under load").
  void sleep_on_events(caf::blocking_actor* self, std::chrono::milliseconds max) {
    auto woke = worker.wait_for_events(max);
    if (!woke || *woke != ucx_wake::stalled) {
      channel_poll.not_stalled();
      return;
    }
    if (channel_poll.stalled() && !self->has_next_message())
      std::this_thread::sleep_for(channel_poll.stall_nap());
  }

  /// Progresses the worker until it has nothing left; answers whether
  /// anything moved.
  bool drain_progress() {
    if ((faults.no_progress || serve_delayed()) && gets.empty())
      return false;
    bool moved = false;
    while (worker.progress() > 0)
      moved = true;
    return moved;
  }

  /// At stop: nothing may be left for UCX to write after its memory goes.
  void teardown() {
    if (control) // its calls fail (peer_down); its handler goes last
      control->close();
    for (auto& g : gets) // UCX stops before the worker goes
      g.rp.deliver(make_error(errc::get_failed, "UCX engine stopped"));
    for (auto* list : {&gets, &abandoned})
      for (auto& g : *list)
        if (g.request.pending())
          lent.push_back(g.dest);
    gets.clear();
    abandoned.clear();
    rkeys.clear(); // the keys go before their endpoints and worker
    for (size_t n = 0; n < endpoints.size() + retired.size(); ++n)
      count_close(endpoint_close_reason::shutdown);
    retired.clear();
    endpoints.clear();
    fences.fail_all(make_error(errc::draining, "UCX engine stopped"));
    wireups.clear();
    warm->clear();
    // After the endpoints: the sends their close cancelled counted in it.
    control.reset();
    update_gauge();
  }

  std::string stat() const {
    auto c = rkeys.stats();
    auto w = warm->stats();
    return nlohmann::json{
      {"rkey_cache",
       {{"hits", c.hits},
        {"unpacks", c.unpacks},
        {"evictions", c.evictions},
        {"invalidations", c.invalidations},
        {"entries", c.entries},
        {"bytes", c.bytes}}},
      {"warm_destination",
       {{"kept", w.kept},
        {"reused", w.reused},
        {"dropped", w.dropped},
        {"held_bytes", w.held_bytes}}},
      {"control_channel",
       control ? nlohmann::json::parse(control->stat()) : nlohmann::json(nullptr)},
      {"channel_poll_backoffs", channel_poll.backoffs()},
      {"stalled_naps", channel_poll.naps()},
      {"gets_in_flight", gets.size()},
      {"gets_abandoned", abandoned.size()},
      {"abandoned_bytes", abandoned_bytes()},
      {"endpoints",
       {{"open", endpoints.size() + retired.size()},
        {"created", endpoints_created},
        {"reporting_failures", reporting_endpoints()},
        {"eager_wireups", eager_wireups_done},
        {"wireups_pending", wireups.size()},
        {"idle_timeout_ms", activity.timeout().count()},
        {"closed",
         {{"idle", closed_by[0]},
          {"peer_down", closed_by[1]},
          {"goodbye", closed_by[2]},
          {"shutdown", closed_by[3]},
          {"quarantine", closed_by[4]}}}}},
      {"fences_waiting", fences.size()}}
      .dump();
  }
};

void engine_loop(caf::blocking_actor* self, std::shared_ptr<engine> e) {
  auto handlers = [&](auto&& on_timeout) {
    self->receive(
      [&](ucx_peer_atom, uint64_t worker_id, std::vector<char>& address,
          caf::actor& gateway, bool failure_reports) {
        e->set_address(worker_id, std::move(address), std::move(gateway), failure_reports);
      },
      [&](ucx_goodbye_atom, uint64_t worker_id) { e->on_goodbye(worker_id); },
      [&](ucx_forget_atom, uint64_t worker_id) { e->forget(worker_id); },
      [&](ucx_hold_atom, int64_t delta) {
        e->holds += delta;
        if (delta > 0 && e->faults.serve_delay.count() > 0)
          e->serve_from = clock_type::now() + e->faults.serve_delay;
      },
      [&](ucx_fence_atom, uint64_t worker_id) { e->fence(self, worker_id); },
      [&](ucx_retire_atom, std::vector<uint64_t>& peers, pinned_ptr& block) {
        e->retire_for_quarantine(self, peers, std::move(block));
      },
      [&](ucx_get_atom, uint64_t worker_id, uint64_t generation, uint64_t addr,
          uint64_t len, std::vector<uint8_t>& rkey, pinned_ptr& dest) {
        e->start_get(self, worker_id, generation, addr, len, rkey, std::move(dest));
      },
      [&](ucx_get_atom, uint64_t worker_id, uint64_t addr, uint64_t len,
          std::vector<uint8_t>& rkey, pinned_ptr& dest) {
        e->start_get(self, worker_id, std::nullopt, addr, len, rkey, std::move(dest));
      },
      [&](stat_atom) -> std::string { return e->stat(); },
      [&](control_owner_atom, caf::actor& owner) {
        if (e->control)
          e->control->set_owner(std::move(owner));
      },
      [&](control_watcher_atom, caf::actor& watcher) {
        if (e->control)
          e->control->set_watcher(std::move(watcher));
      },
      [&](control_lost_atom, uint64_t worker_id) {
        if (e->control)
          e->control->peer_fell_back(worker_id);
      },
      [&](control_peer_atom, uint64_t worker_id, uint64_t token_out, uint64_t token_in,
          caf::node_id& node, bool confirmed) -> bool {
        if (!e->control || token_out == 0 || token_in == 0)
          return false;
        e->control->add_peer(worker_id, {token_out, token_in}, std::move(node), confirmed);
        return true;
      },
      [&](control_ready_atom, uint64_t worker_id, uint64_t token_out) -> bool {
        return e->control && e->control->confirm(worker_id, token_out);
      },
      [&](control_call_atom, uint64_t worker_id, uint8_t op, std::string& body,
          uint64_t timeout_ms) {
        auto rp = self->make_response_promise();
        if (!e->control || op == 0 || op > control_op_max)
          return rp.deliver(make_error(errc::no_channel, "no control channel here"));
        e->control->call(worker_id, static_cast<control_op>(op), body, false,
                         std::chrono::milliseconds{timeout_ms}, rp);
      },
      [&](control_tell_atom, uint64_t worker_id, uint8_t op, std::string& body,
          caf::actor& owner, caf::message& by_caf) {
        bool sent = e->control && op > 0 && op <= control_op_max
                    && e->control->call(worker_id, static_cast<control_op>(op), body, true,
                                        std::chrono::milliseconds{0},
                                        caf::response_promise{});
        // Nothing went out: the same call by CAF, anonymous, as the
        // consumer's own would be (sent as the engine, the owner's answer
        // would come here, and the engine's refusal of it would end the owner).
        if (!sent && owner)
          caf::anon_send(owner, std::move(by_caf));
      },
      [&](control_answer_atom, uint64_t worker_id, uint64_t call_id, uint8_t op,
          std::string& json, chunk_bytes& bytes) {
        if (!e->control || op == 0 || op > control_op_max)
          return;
        auto ctl_op = static_cast<control_op>(op);
        // The answer's bytes stay where they are until UCX has sent them
        // (a chunk: a view of the owner's staged payload).
        auto kept = std::make_shared<std::pair<std::string, chunk_bytes>>(std::move(json),
                                                                           std::move(bytes));
        std::string_view text = kept->first;
        std::string_view raw{kept->second.data(), kept->second.size()};
        if (ctl_op == control_op::pull) // the chunk is the answer's body
          e->control->answer(worker_id, call_id, ctl_op, raw, {}, kept);
        else
          e->control->answer(worker_id, call_id, ctl_op, text, raw, kept);
      },
      [&](control_error_atom, uint64_t worker_id, uint64_t call_id, uint8_t op,
          uint8_t code, std::string& text) {
        if (e->control && op > 0 && op <= control_op_max)
          e->control->fail(worker_id, call_id, static_cast<control_op>(op), code, text);
      },
      [&](caf::exit_msg&) { e->running = false; },
      caf::others >> [](caf::message_view&) -> caf::result<caf::message> {
        return caf::sec::unexpected_message;
      },
      caf::after(on_timeout) >> [] {});
  };
  while (e->running) {
    e->warm->expire();
    if (!e->abandoned.empty()) {
      if (!e->faults.no_progress && !e->serve_delayed()) {
        if (e->fences.empty())
          e->worker.progress();
        else // a fence waits on them: all they can move now
          while (e->worker.progress() > 0) {
          }
      }
      e->reap_abandoned();
    }
    e->check_wireups();
    if (!e->fences.empty())
      e->fences.check(e->runs_fn(), clock_type::now());
    e->reap_idle(self);
    if (e->control)
      e->control->poll(self);
    if (!e->busy() && !e->listening()) {
      // Idle: sleep on the mailbox (looking at abandoned GETs now and then,
      // waking for the idle reaper's next scan).
      handlers(e->idle_sleep());
      continue;
    }
    if (!e->busy()) {
      // Idle but listening: what arrived first; then, while an answer is
      // due (ours from a peer, or the owner's to a peer's call), a short
      // poll, as a waking thread costs more than the round trip; else a
      // sleep on the worker's event fd (a frame, or a sender's wake()).
      bool moved = e->drain_progress();
      moved = e->control->poll(self) || moved;
      while (self->has_next_message() && e->running)
        handlers(std::chrono::seconds(0)), moved = true;
      auto now = clock_type::now();
      if (moved) {
        e->channel_poll.moved(now);
      } else if (e->control->awaiting() && e->channel_poll.poll(now)) {
        std::this_thread::yield();
        e->channel_poll.yielded(now, clock_type::now());
      } else {
        e->sleep_on_events(self, e->listening_sleep());
      }
      continue;
    }
    if (e->drain_progress()) {
      e->last_motion = clock_type::now();
      e->channel_poll.not_stalled();
    }
    bool changed = e->reap_gets();
    if (e->control && e->control->poll(self))
      changed = true;
    while (self->has_next_message() && e->running)
      handlers(std::chrono::seconds(0)), changed = true;
    if (changed) {
      e->last_motion = clock_type::now();
      e->channel_poll.not_stalled();
      continue;
    }
    if (!e->busy())
      continue;
    if ((!e->gets.empty() || e->serving())
        && clock_type::now() - e->last_motion < spin_window) {
      // A GET moves (ours, or a peer's that our worker serves: over an
      // emulated transport each fragment needs our progress): poll.
      // Shared-memory transports move a large GET in fragments, one per
      // progress call, and raise no event.
      std::this_thread::yield();
      continue;
    }
    // Nothing moves (our descriptors out, or a GET that stalled): sleep
    // until UCX has events or a sender signals, at most a few ms.
    e->sleep_on_events(self, std::chrono::milliseconds(e->gets.empty() ? 2 : 5));
  }
  e->teardown();
}

} // namespace

ucx_engine_ref spawn_ucx_engine(caf::actor_system& sys, ucx_engine_start start,
                                std::vector<char>& worker_address) {
  auto worker = ucx_worker::create(*start.context);
  if (!worker) {
    spdlog::warn("UCX worker: {}", worker.error_message());
    return {};
  }
  auto warm = std::make_shared<warm_destination>(start.warm);
  auto e = std::make_shared<engine>(engine{
    start.context, {}, std::move(*worker), start.faults, start.get_timeout,
    start.metrics, {}, {}, {}, {}, {}, {}, 0, true,
    rkey_cache<ucx_remote_key>{start.rkey_cache}, start.rkey_cache_enabled, warm});
  e->own_worker_id = start.worker_id;
  e->eager = start.eager_endpoints;
  e->activity = endpoint_activity{start.ep_idle_timeout};
  if (start.control_channel) {
    auto* raw = e.get(); // the channel lives inside the engine it calls back
    e->control = ucx_control_channel::open(
      e->worker, start.worker_id,
      [raw](uint64_t peer, std::string& why) { return raw->control_endpoint(peer, why); },
      start.metrics);
    if (e->control) {
      e->control->drop_arrivals_for_test(start.faults.drop_control_frames);
      e->control->fail_sends_after_for_test(start.faults.fail_control_sends_after);
    }
  }
  worker_address = e->worker.address();
  auto shared_worker = e->worker.shared_native();
  bool control = e->control != nullptr;
  auto actor = sys.spawn(engine_loop, e);
  ucx_engine_ref ref{actor, shared_worker, warm};
  ref.set_control_channel(control);
  return ref;
}

} // namespace ferry
