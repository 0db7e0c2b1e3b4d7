#include "actors/arena_pool_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "actors/rdma_metrics.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

struct pool_state {
  std::unique_ptr<registered_budget> budget;
  std::unique_ptr<arena_pool> pool;
  rdma_metrics* metrics = nullptr;
  uint64_t counted_registrations = 0;
  static inline const char* name = "ferry.arena_pool";
};

using pool_ptr = arena_pool_actor::stateful_pointer<pool_state>;

void update_metrics(pool_ptr self) {
  auto* m = self->state.metrics;
  if (!m)
    return;
  auto& p = *self->state.pool;
  m->registered_bytes->Set(static_cast<double>(self->state.budget->used()));
  m->live_regions->Set(static_cast<double>(p.arena_count()));
  auto regs = p.registrations();
  m->arena_registrations->Increment(
    static_cast<double>(regs - self->state.counted_registrations));
  self->state.counted_registrations = regs;
}

arena_pool_actor::behavior_type pool_behavior(pool_ptr self, arena_pool_config cfg,
                                              region_mapper mapper,
                                              uint64_t budget_bytes,
                                              rdma_metrics* metrics) {
  auto& st = self->state;
  st.budget = std::make_unique<registered_budget>(budget_bytes);
  st.pool = std::make_unique<arena_pool>(cfg, std::move(mapper), *st.budget);
  st.metrics = metrics;
  std::chrono::milliseconds period{0};
  if (cfg.reclaim_after) {
    period = std::max(std::chrono::milliseconds{10}, *cfg.reclaim_after / 2);
    self->delayed_send(self, period, tick_atom::value);
  }
  return {
    [=](pool_alloc_atom, uint64_t bytes, bool may_map) -> caf::result<pinned_ptr> {
      auto r = self->state.pool->allocate(bytes, may_map);
      update_metrics(self);
      if (auto* why = std::get_if<pool_refusal>(&r))
        return make_error(*why == pool_refusal::budget ? errc::budget_exhausted
                                                       : errc::pool_exhausted,
                          "no registered block of " + std::to_string(bytes)
                            + " bytes (" + to_string(*why) + ")");
      auto g = std::get<pool_grant>(r);
      auto pool = caf::actor_cast<arena_pool_actor>(self);
      auto arena = g.arena_id;
      auto token = g.token;
      return std::make_shared<pinned_block>(
        g.data, g.size, g.address, g.rkey, g.generation, [pool, arena, token] {
          caf::anon_send(pool, pool_free_atom::value, arena, token.offset,
                         token.node);
        });
    },
    [=](pool_free_atom, uint32_t arena, uint32_t offset, uint32_t node) {
      self->state.pool->free(arena, offset_allocator::allocation{offset, node});
      update_metrics(self);
    },
    [=](tick_atom) {
      self->state.pool->reclaim(arena_pool::clock_type::now());
      update_metrics(self);
      self->delayed_send(self, period, tick_atom::value);
    },
    [=](stat_atom) -> std::string {
      auto& p = *self->state.pool;
      return nlohmann::json{{"arenas", p.arena_count()},
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
                                  rdma_metrics* metrics) {
  return sys.spawn<caf::detached>(pool_behavior, cfg, std::move(mapper),
                                  budget_bytes, metrics);
}

} // namespace ferry
