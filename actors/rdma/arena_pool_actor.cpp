#include "actors/rdma/arena_pool_actor.hpp"

#include <optional>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "actors/rdma/rdma_metrics.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

struct pool_state {
  std::unique_ptr<registered_budget> budget;
  std::unique_ptr<arena_pool> pool;
  std::unique_ptr<region_registry> regions; // destroyed first: unmaps regions
  rdma_metrics* metrics = nullptr;
  uint64_t counted_registrations = 0;
  uint64_t counted_external = 0;
  bool poll_armed = false;
  bool reclaim_armed = false; // the reclaim sweep ticks only while armed
  std::optional<caf::typed_response_promise<bool>> drain_reply;
  ~pool_state() {
    regions.reset(); // before the budget it charges
  }
  static inline const char* name = "ferry.arena_pool";
};

using pool_ptr = arena_pool_actor::stateful_pointer<pool_state>;

void update_metrics(pool_ptr self) {
  auto* m = self->state.metrics;
  if (!m)
    return;
  auto& p = *self->state.pool;
  m->registered_bytes->Set(static_cast<double>(self->state.budget->used()));
  auto mapped = p.mapped_bytes();
  m->arena_utilization->Set(mapped == 0 ? 0.0
                                        : static_cast<double>(p.granted_bytes())
                                            / static_cast<double>(mapped));
  auto& r = *self->state.regions;
  m->live_regions->Set(static_cast<double>(p.arena_count() + r.live()));
  auto regs = p.registrations();
  m->arena_registrations->Increment(
    static_cast<double>(regs - self->state.counted_registrations));
  self->state.counted_registrations = regs;
  auto ext = r.registrations();
  m->external_registrations->Increment(
    static_cast<double>(ext - self->state.counted_external));
  self->state.counted_external = ext;
}

constexpr std::chrono::milliseconds region_poll_period{5};

/// Arms the reclaim sweep when something can be reclaimed (disarmed, it
/// costs no timer).
void arm_reclaim_if_needed(pool_ptr self) {
  auto& st = self->state;
  if (st.reclaim_armed || !st.pool->reclaimable())
    return;
  st.reclaim_armed = true;
  self->delayed_send(self, st.pool->reclaim_period(), tick_atom::value);
}

/// Finishes unregistrations that are due; keeps polling while any is queued
/// and answers the shutdown sweep when none is.
void poll_regions(pool_ptr self) {
  auto& st = self->state;
  bool pending = st.regions->progress(region_registry::clock_type::now());
  update_metrics(self);
  if (pending) {
    if (!st.poll_armed) {
      st.poll_armed = true;
      self->delayed_send(self, region_poll_period, poll_atom::value);
    }
    return;
  }
  if (st.drain_reply) {
    st.drain_reply->deliver(st.regions->all_drained());
    st.drain_reply.reset();
  }
}

region_registry::clock_type::time_point deadline_in(uint64_t timeout_ms) {
  return region_registry::clock_type::now() + std::chrono::milliseconds{timeout_ms};
}

arena_pool_actor::behavior_type pool_behavior(pool_ptr self, arena_pool_config cfg,
                                              region_mapper mapper,
                                              uint64_t budget_bytes,
                                              rdma_metrics* metrics,
                                              external_mapper external) {
  auto& st = self->state;
  st.budget = std::make_unique<registered_budget>(budget_bytes);
  st.pool = std::make_unique<arena_pool>(cfg, std::move(mapper), *st.budget);
  st.regions = std::make_unique<region_registry>(*st.budget, std::move(external));
  // A caller woken by a release reads the gauges already settled.
  st.regions->set_before_release([self] { update_metrics(self); });
  st.metrics = metrics;
  return {
    [=](pool_alloc_atom, uint64_t bytes, bool may_map) -> caf::result<pinned_ptr> {
      if (self->state.regions->gated())
        return make_error(errc::draining, "the node is shutting down");
      auto r = self->state.pool->allocate(bytes, may_map);
      update_metrics(self);
      if (auto* why = std::get_if<pool_refusal>(&r))
        return make_error(*why == pool_refusal::budget ? errc::budget_exhausted
                                                       : errc::pool_exhausted,
                          "no registered block of " + std::to_string(bytes)
                            + " bytes (" + to_string(*why) + ")");
      auto g = std::get<pool_grant>(r);
      // Weak: a block held past a node's stop must not keep the pool alive
      // (freeing into a gone pool is a no-op), but it keeps its arena
      // mapped until it goes (the stop unmaps every other arena).
      auto weak_pool = caf::actor_cast<caf::weak_actor_ptr>(self->ctrl());
      auto arena = g.arena_id;
      auto token = g.token;
      return std::make_shared<pinned_block>(
        g.data, g.size, g.address, g.rkey, g.generation,
        [weak_pool, arena, token, mapping = std::move(g.mapping)] {
          if (auto pool = caf::actor_cast<arena_pool_actor>(weak_pool))
            caf::anon_send(pool, pool_free_atom::value, arena, token.offset,
                           token.node);
        });
    },
    [=](pool_free_atom, uint32_t arena, uint32_t offset, uint32_t node) {
      self->state.pool->free(arena, offset_allocator::allocation{offset, node});
      update_metrics(self);
      arm_reclaim_if_needed(self);
    },
    [=](tick_atom) {
      self->state.reclaim_armed = false;
      self->state.pool->reclaim(arena_pool::clock_type::now());
      update_metrics(self);
      arm_reclaim_if_needed(self);
    },
    [=](region_register_atom, external_region_ptr& region) -> caf::result<uint64_t> {
      auto r = self->state.regions->register_region(region);
      update_metrics(self);
      if (auto* no = std::get_if<region_registry::refused>(&r)) {
        auto code = no->why == region_registry::refusal::budget ? errc::budget_exhausted
                    : no->why == region_registry::refusal::draining
                      ? errc::draining
                      : errc::invalid_argument;
        return make_error(code, no->message);
      }
      return std::get<uint64_t>(r);
    },
    [=](region_unregister_atom, external_region_ptr& region, uint64_t timeout_ms) {
      self->state.regions->begin_unregister(region, deadline_in(timeout_ms));
      poll_regions(self);
    },
    [=](drain_atom, uint64_t timeout_ms) -> caf::result<bool> {
      auto& st = self->state;
      st.regions->gate_all(deadline_in(timeout_ms));
      auto rp = self->make_response_promise<bool>();
      st.drain_reply = rp;
      poll_regions(self);
      return rp;
    },
    [=](poll_atom) {
      self->state.poll_armed = false;
      poll_regions(self);
    },
    [=](pool_unmap_all_atom) -> uint64_t {
      self->state.pool->unmap_all();
      update_metrics(self);
      return self->state.budget->used();
    },
    [=](stat_atom) -> std::string {
      auto& p = *self->state.pool;
      auto list = nlohmann::json::array();
      for (auto& a : p.arenas(arena_pool::clock_type::now())) {
        nlohmann::json one{{"id", a.id}, {"bytes", a.bytes}, {"blocks", a.blocks}};
        if (a.dedicated)
          one["dedicated"] = true;
        if (a.empty_for)
          one["empty_for_ms"] = a.empty_for->count();
        list.push_back(std::move(one));
      }
      return nlohmann::json{{"arenas", p.arena_count()},
                            {"arena_list", std::move(list)},
                            {"reclaim_armed", self->state.reclaim_armed},
                            {"regions", self->state.regions->live()},
                            {"blocks", p.live_blocks()},
                            {"registered_bytes", self->state.budget->used()},
                            {"budget", self->state.budget->cap()}}
        .dump();
    },
  };
}

} // namespace

arena_pool_actor spawn_arena_pool(caf::actor_system& sys, arena_pool_config cfg,
                                  region_mapper mapper, uint64_t budget_bytes,
                                  rdma_metrics* metrics,
                                  external_mapper external, bool own_thread) {
  if (!own_thread)
    return sys.spawn(pool_behavior, cfg, std::move(mapper), budget_bytes, metrics,
                     std::move(external));
  return sys.spawn<caf::detached>(pool_behavior, cfg, std::move(mapper),
                                  budget_bytes, metrics, std::move(external));
}

} // namespace ferry
