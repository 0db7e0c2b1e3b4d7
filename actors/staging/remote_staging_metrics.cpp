#include "actors/staging/remote_staging_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "actors/staging/remote_staging_stats.hpp"

namespace ferry {

namespace {

/// The counters in the order sync() reads the stats (one list, so the two
/// cannot drift apart).
std::vector<uint64_t> counter_values(const remote_staging_stats& s) {
  return {s.pins.load(),
          s.pins_refused.load(),
          s.delegates.load(),
          s.source_unpinned.load(),
          s.source_abandoned.load(),
          s.completed.load(),
          s.failed.load(),
          s.cancelled.load(),
          s.refused.load(),
          s.effect_unknown.load(),
          s.source_bytes.load(),
          s.bytes_read.load(),
          s.bytes_written.load(),
          s.source_retained.load(),
          s.source_ucx_sessions.load(),
          s.ucx_sessions.load()};
}

} // namespace

void remote_staging_metrics::add(prometheus::Counter& c) {
  counters_.push_back(counted{&c});
}

remote_staging_metrics::remote_staging_metrics(prometheus::Registry& r) {
  auto& active = prometheus::BuildGauge()
                   .Name("ferry_remote_staging_active")
                   .Help("Remote staging sessions running, by role")
                   .Register(r);
  source_active_ = &active.Add({{"role", "source"}});
  requester_active_ = &active.Add({{"role", "requester"}});
  queued_ = &prometheus::BuildGauge()
               .Name("ferry_remote_staging_queued")
               .Help("Remote staging sessions waiting for a requester shard")
               .Register(r)
               .Add({});
  auto& pins = prometheus::BuildCounter()
                 .Name("ferry_remote_staging_pins_total")
                 .Help("Pins this node answered as a source, by result")
                 .Register(r);
  add(pins.Add({{"result", "ok"}}));
  add(pins.Add({{"result", "refused"}}));
  add(prometheus::BuildCounter()
        .Name("ferry_remote_staging_delegates_total")
        .Help("Copies this node started for remote staging sessions (source)")
        .Register(r)
        .Add({}));
  auto& sessions = prometheus::BuildCounter()
                     .Name("ferry_remote_staging_sessions_total")
                     .Help("Remote staging sessions ended, by role and how")
                     .Register(r);
  add(sessions.Add({{"role", "source"}, {"end", "unpinned"}}));
  add(sessions.Add({{"role", "source"}, {"end", "abandoned"}}));
  add(sessions.Add({{"role", "requester"}, {"end", "completed"}}));
  add(sessions.Add({{"role", "requester"}, {"end", "failed"}}));
  add(sessions.Add({{"role", "requester"}, {"end", "cancelled"}}));
  add(sessions.Add({{"role", "requester"}, {"end", "refused"}}));
  add(prometheus::BuildCounter()
        .Name("ferry_remote_staging_effect_unknown_total")
        .Help("Failed remote WRITEs that may have changed the source's bytes")
        .Register(r)
        .Add({}));
  auto& bytes = prometheus::BuildCounter()
                  .Name("ferry_remote_staging_bytes_total")
                  .Help("Remote staging bytes: copied on the source's device, read and "
                        "written by the requester")
                  .Register(r);
  add(bytes.Add({{"role", "source"}, {"direction", "copied"}}));
  add(bytes.Add({{"role", "requester"}, {"direction", "read"}}));
  add(bytes.Add({{"role", "requester"}, {"direction", "written"}}));
  add(prometheus::BuildCounter()
        .Name("ferry_remote_staging_retained_chunks_total")
        .Help("Source chunks kept out of the pool after a copy did not confirm")
        .Register(r)
        .Add({}));
  auto& ucx = prometheus::BuildCounter()
                .Name("ferry_remote_staging_ucx_sessions_total")
                .Help("Remote staging sessions whose CROSS was one UCX GET per chunk, by role")
                .Register(r);
  add(ucx.Add({{"role", "source"}}));
  add(ucx.Add({{"role", "requester"}}));
}

void remote_staging_metrics::sync(const remote_staging_stats& s) {
  std::lock_guard<std::mutex> g{mu_};
  auto now = counter_values(s);
  for (size_t i = 0; i < counters_.size() && i < now.size(); ++i) {
    auto& c = counters_[i];
    if (now[i] > c.seen)
      c.series->Increment(static_cast<double>(now[i] - c.seen));
    c.seen = now[i];
  }
  source_active_->Set(static_cast<double>(s.source_active.load()));
  requester_active_->Set(static_cast<double>(s.active.load()));
  queued_->Set(static_cast<double>(s.queued.load()));
}

} // namespace ferry
