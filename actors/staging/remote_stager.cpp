#include "actors/staging/remote_stager.hpp"

#include <caf/actor_pool.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_execution_unit.hpp>

#include "actors/staging/requester_session.hpp"
#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

struct shared_line {
  remote_stager_params p;
  std::atomic<size_t> in_line{0}; // sessions waiting or running
};

remote_stage_outcome failed(caf::error err) {
  remote_stage_outcome out;
  out.error = std::move(err);
  return out;
}

/// One shard: a detached actor that runs each session to its end.
caf::behavior shard(caf::event_based_actor* self, std::shared_ptr<shared_line> line) {
  return {
    [self, line](remote_stage_atom, const remote_stage_request& req) -> remote_stage_outcome {
      struct leave_line {
        shared_line& l;
        ~leave_line() { l.in_line.fetch_sub(1); }
      } leave{*line};
      auto& stats = *line->p.stats;
      stats.queued.fetch_sub(1);
      if (!req.ticket->start()) {
        stats.cancelled.fetch_add(1);
        return failed(make_error(errc::cancelled,
                                 "the remote staging request was cancelled before its Pin"));
      }
      if (std::chrono::steady_clock::now() >= req.deadline) {
        stats.failed.fetch_add(1);
        return failed(make_error(errc::timeout, "the remote staging request waited in the "
                                                "queue past its deadline"));
      }
      stats.active.fetch_add(1);
      auto out = run_requester_session(self->system(), line->p, req);
      stats.active.fetch_sub(1);
      if (out.error) {
        stats.failed.fetch_add(1);
        if (out.effect == remote_effect::unknown)
          stats.effect_unknown.fetch_add(1);
      } else {
        stats.completed.fetch_add(1);
        (req.direction == stage_direction::read ? stats.bytes_read : stats.bytes_written)
          .fetch_add(out.completed);
      }
      return out;
    },
  };
}

/// The front: bounds the line, then hands the request to a shard.
caf::behavior front(caf::event_based_actor* self, std::shared_ptr<shared_line> line,
                    caf::actor pool) {
  self->link_to(pool);
  return {
    [=](remote_stage_atom a, remote_stage_request& req) -> caf::result<caf::message> {
      auto max = line->p.max_queued == 0 ? 1 : line->p.max_queued;
      if (line->in_line.load() >= max) {
        line->p.stats->refused.fetch_add(1);
        return make_error(errc::resource_exhausted,
                          std::to_string(max) + " remote staging sessions are already waiting");
      }
      line->in_line.fetch_add(1);
      line->p.stats->queued.fetch_add(1);
      return self->delegate(pool, a, std::move(req));
    },
  };
}

} // namespace

caf::actor spawn_remote_stagers(caf::actor_system& sys, remote_stager_params p) {
  auto line = std::make_shared<shared_line>();
  auto shards = std::min(std::max<size_t>(p.shards, 1), max_remote_stager_shards);
  p.stats->shards.store(shards);
  line->p = std::move(p);
  caf::scoped_execution_unit context{&sys};
  auto pool = caf::actor_pool::make(
    &context, shards, [&sys, &line] { return sys.spawn<caf::detached>(shard, line); },
    caf::actor_pool::round_robin());
  return sys.spawn(front, line, pool);
}

} // namespace ferry
