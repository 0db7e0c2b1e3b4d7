#include "actors/staging/staging_workers.hpp"

#include <caf/actor_pool.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_execution_unit.hpp>
#include <prometheus/counter.h>

#include "actors/staging/staging_metrics.hpp"
#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

struct shared_line {
  std::shared_ptr<staging::local_stager> stager;
  staging_metrics* metrics = nullptr;
  std::atomic<size_t> in_line{0}; // requests waiting or running
};

/// One worker: a detached actor that runs each copy to its end.
caf::behavior staging_worker(caf::event_based_actor*, std::shared_ptr<shared_line> line) {
  return {
    [line](gpu_copy_atom, const gpu_copy_request& req) -> caf::result<uint64_t> {
      struct leave_line {
        shared_line& l;
        ~leave_line() { l.in_line.fetch_sub(1); }
      } leave{*line};
      auto* m = line->metrics;
      if (!req.ticket->start()) {
        if (m)
          m->copies_cancelled->Increment();
        return make_error(errc::cancelled, "the GPU copy was cancelled before it started");
      }
      auto r = line->stager->copy(req.device, req.job);
      if (m) {
        m->sync(line->stager->stats());
        (r.error ? m->copies_failed : m->copies_ok)->Increment();
      }
      if (r.error)
        return std::move(r.error);
      return static_cast<uint64_t>(r.completed);
    },
  };
}

/// The front: bounds the line, then hands the request to a worker.
caf::behavior staging_front(caf::event_based_actor* self, std::shared_ptr<shared_line> line,
                            caf::actor pool, size_t max_queued) {
  self->link_to(pool);
  return {
    [=](gpu_copy_atom a, gpu_copy_request& req) -> caf::result<caf::message> {
      if (line->in_line.load() >= max_queued) {
        if (auto* m = line->metrics)
          m->copies_refused->Increment();
        return make_error(errc::resource_exhausted,
                          std::to_string(max_queued) + " GPU copies are already waiting");
      }
      line->in_line.fetch_add(1);
      return self->delegate(pool, a, std::move(req));
    },
  };
}

} // namespace

caf::actor spawn_staging_workers(caf::actor_system& sys, staging_workers_params p) {
  auto line = std::make_shared<shared_line>();
  line->stager = std::move(p.stager);
  line->metrics = p.metrics;
  if (line->metrics)
    line->metrics->set_available(line->stager->unavailable_reason().empty());
  caf::scoped_execution_unit context{&sys};
  auto pool = caf::actor_pool::make(
    &context, p.workers == 0 ? 1 : p.workers,
    [&sys, &line] { return sys.spawn<caf::detached>(staging_worker, line); },
    caf::actor_pool::round_robin());
  return sys.spawn(staging_front, line, pool, p.max_queued == 0 ? 1 : p.max_queued);
}

} // namespace ferry
