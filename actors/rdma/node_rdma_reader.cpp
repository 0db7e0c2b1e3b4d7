// The node's rdma_reader: the arena pool actor and the UCX engine.
#include <caf/event_based_actor.hpp>

#include "actors/rdma/rdma_reader.hpp"

namespace ferry {

namespace {

class node_rdma_reader final : public rdma_reader {
public:
  node_rdma_reader(arena_pool_actor pool, ucx_engine_ref engine)
    : pool_(std::move(pool)), engine_(std::move(engine)) {}

  void allocate(caf::event_based_actor* self, uint64_t bytes, bool for_get,
                std::chrono::milliseconds timeout, block_handler done) override {
    if (for_get)
      if (auto* warm = engine_.warm())
        if (auto block = warm->take(bytes)) // pages already faulted in
          return done(std::move(block));
    self->request(pool_, timeout, pool_alloc_atom::value, bytes, true)
      .then([done](pinned_ptr& block) { done(std::move(block)); },
            [done](caf::error& err) { done(std::move(err)); });
  }

  void get(caf::event_based_actor* self, uint64_t worker_id,
           const rdma_descriptor& desc, pinned_ptr dest,
           std::chrono::milliseconds timeout, get_handler done) override {
    self
      ->request(engine_.actor(), timeout, ucx_get_atom::value, worker_id,
                desc.generation, desc.addr, desc.len, desc.rkey, std::move(dest))
      .then([done](uint64_t nanos) { done(nanos); },
            [done](caf::error& err) { done(std::move(err)); });
    engine_.wake();
  }

  const arena_pool_actor& pool() const override { return pool_; }

  void recycle(pinned_ptr block) override {
    if (auto* warm = engine_.warm())
      warm->keep(std::move(block));
  }

private:
  arena_pool_actor pool_;
  ucx_engine_ref engine_;
};

} // namespace

std::shared_ptr<rdma_reader> make_node_rdma_reader(arena_pool_actor pool,
                                                   ucx_engine_ref engine) {
  if (!pool || !engine)
    return nullptr;
  return std::make_shared<node_rdma_reader>(std::move(pool), std::move(engine));
}

} // namespace ferry
