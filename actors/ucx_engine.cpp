#include "actors/ucx_engine.hpp"

#include <list>
#include <map>
#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_get.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry {

namespace {

using clock_type = std::chrono::steady_clock;

struct pending_get {
  ucx_get_request request;
  ucx_remote_key key;
  pinned_ptr dest; // held until UCX is done with it
  caf::response_promise rp;
  clock_type::time_point started;
  std::optional<clock_type::time_point> done_at; // completed, reply held (hook)
  caf::error failure;
};

struct engine {
  std::shared_ptr<const ucx_context> context;
  ucx_worker worker;
  ucx_engine_faults faults;
  std::map<uint64_t, std::vector<char>> addresses;
  std::map<uint64_t, ucx_endpoint> endpoints;
  std::list<pending_get> gets;
  int64_t holds = 0;
  bool running = true;
  rkey_cache<ucx_remote_key> rkeys;
  bool cache_rkeys = true;
  std::shared_ptr<warm_destination> warm;

  /// A new address for a peer (a new incarnation): its endpoint and every
  /// key unpacked on it go; the next GET wires up afresh.
  void set_address(uint64_t worker_id, std::vector<char> address) {
    addresses[worker_id] = std::move(address);
    rkeys.invalidate_peer(worker_id);
    endpoints.erase(worker_id);
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
    if (auto i = endpoints.find(worker_id); i != endpoints.end())
      return &i->second;
    auto a = addresses.find(worker_id);
    if (a == addresses.end()) {
      why = "no UCX address for worker " + std::to_string(worker_id);
      return nullptr;
    }
    auto ep = ucx_endpoint::connect(worker, a->second);
    if (!ep) {
      why = ep.error_message();
      return nullptr;
    }
    return &endpoints.emplace(worker_id, std::move(*ep)).first->second;
  }

  void start_get(caf::blocking_actor* self, uint64_t worker_id,
                 std::optional<uint64_t> generation, uint64_t addr, uint64_t len,
                 const std::vector<uint8_t>& rkey, pinned_ptr dest) {
    pending_get g;
    g.rp = self->make_response_promise();
    g.started = clock_type::now();
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
    gets.push_back(std::move(g));
  }

  /// Completes what UCX finished; returns true when something changed.
  bool reap_gets() {
    bool changed = false;
    auto now = clock_type::now();
    for (auto i = gets.begin(); i != gets.end();) {
      auto& g = *i;
      if (!g.done_at) {
        auto r = g.request.test();
        if (r.state == ucx_get_state::in_progress) {
          ++i;
          continue;
        }
        if (!r.ok())
          g.failure = make_error(errc::get_failed, r.error);
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
      i = gets.erase(i);
      changed = true;
    }
    return changed;
  }

  bool busy() const { return !gets.empty() || holds > 0; }

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
      {"gets_in_flight", gets.size()}}
      .dump();
  }
};

void engine_loop(caf::blocking_actor* self, std::shared_ptr<engine> e) {
  auto handlers = [&](auto&& on_timeout) {
    self->receive(
      [&](ucx_peer_atom, uint64_t worker_id, std::vector<char>& address) {
        e->set_address(worker_id, std::move(address));
      },
      [&](ucx_forget_atom, uint64_t worker_id) {
        e->rkeys.invalidate_peer(worker_id);
      },
      [&](ucx_hold_atom, int64_t delta) { e->holds += delta; },
      [&](ucx_get_atom, uint64_t worker_id, uint64_t generation, uint64_t addr,
          uint64_t len, std::vector<uint8_t>& rkey, pinned_ptr& dest) {
        e->start_get(self, worker_id, generation, addr, len, rkey, std::move(dest));
      },
      [&](ucx_get_atom, uint64_t worker_id, uint64_t addr, uint64_t len,
          std::vector<uint8_t>& rkey, pinned_ptr& dest) {
        e->start_get(self, worker_id, std::nullopt, addr, len, rkey, std::move(dest));
      },
      [&](stat_atom) -> std::string { return e->stat(); },
      [&](caf::exit_msg&) { e->running = false; },
      caf::others >> [](caf::message_view&) -> caf::result<caf::message> {
        return caf::sec::unexpected_message;
      },
      caf::after(on_timeout) >> [] {});
  };
  while (e->running) {
    e->warm->expire();
    if (!e->busy()) {
      handlers(std::chrono::seconds(1)); // idle: sleep on the mailbox
      continue;
    }
    while (e->worker.progress() > 0) {
      // drain UCX's work
    }
    bool changed = e->reap_gets();
    while (self->has_next_message() && e->running)
      handlers(std::chrono::seconds(0)), changed = true;
    if (changed || !e->busy())
      continue;
    if (!e->gets.empty()) {
      // A GET of ours is in flight: poll. Shared-memory transports move a
      // large GET in fragments, one per progress call, and raise no event.
      std::this_thread::yield();
      continue;
    }
    // Only our descriptors are out: sleep until UCX has events (an emulated
    // GET's request over tcp) or a sender signals, at most a few ms.
    e->worker.wait_for_events(std::chrono::milliseconds(2));
  }
  for (auto& g : e->gets) // UCX stops before the worker goes
    g.rp.deliver(make_error(errc::get_failed, "UCX engine stopped"));
  e->gets.clear();
  e->rkeys.clear(); // the keys go before their endpoints and worker
  e->endpoints.clear();
  e->warm->clear();
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
  auto e = std::make_shared<engine>(engine{start.context, std::move(*worker),
                                           start.faults, {}, {}, {}, 0, true,
                                           rkey_cache<ucx_remote_key>{start.rkey_cache},
                                           start.rkey_cache_enabled, warm});
  worker_address = e->worker.address();
  auto shared_worker = e->worker.shared_native();
  auto actor = sys.spawn(engine_loop, e);
  return ucx_engine_ref{actor, shared_worker, warm};
}

} // namespace ferry
