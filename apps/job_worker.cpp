#include "apps/job_worker.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "apps/job_types.hpp"
#include "apps/shard_math.hpp"
#include "protocol/errors.hpp"

namespace ferry::app {

namespace {

caf::behavior sort_worker(caf::event_based_actor* self, node_context ctx) {
  return {
    [=](job_task_atom, uint64_t shard, const data_handle& input) {
      auto rp = self->make_response_promise();
      self->request(ctx.consumer, ctx.get_timeout(), get_atom::value, input)
        .then(
          [=](byte_buffer& bytes, uint64_t lease) mutable {
            // The input is ours alone: release it so its owner frees it.
            self->request(ctx.consumer, ctx.request_timeout, release_atom::value,
                          input, lease)
              .then([](uint64_t, bool) {},
                    [=](caf::error& err) {
                      spdlog::warn("release of shard {} failed: {}", shard,
                                   describe(err));
                    });
            auto stats = sort_shard(bytes);
            self
              ->request(ctx.owner, ctx.transfer_timeout, register_pinned_atom::value,
                        std::move(bytes), uint64_t{0})
              .then(
                [=](data_handle& sorted) mutable {
                  rp.deliver(shard_result{shard, sorted, stats.count, stats.sum,
                                          stats.histogram});
                },
                [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
      return rp;
    },
  };
}

} // namespace

worker_registry job_workers() {
  worker_registry r;
  r[sort_worker_name] = [](caf::actor_system& sys, const node_context& ctx,
                           const caf::message&) -> caf::expected<caf::actor> {
    return sys.spawn<caf::detached>(sort_worker, ctx);
  };
  return r;
}

} // namespace ferry::app
