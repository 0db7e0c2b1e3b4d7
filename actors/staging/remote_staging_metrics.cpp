#include "actors/staging/remote_staging_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace ferry {

void remote_staging_metrics::add(prometheus::Counter& c, stat_counter source) {
  counters_.push_back(counted{&c, source});
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
  add(pins.Add({{"result", "ok"}}), &remote_staging_stats::pins);
  add(pins.Add({{"result", "refused"}}), &remote_staging_stats::pins_refused);
  add(prometheus::BuildCounter()
        .Name("ferry_remote_staging_delegates_total")
        .Help("Copies this node started for remote staging sessions (source)")
        .Register(r)
        .Add({}),
      &remote_staging_stats::delegates);
  auto& sessions = prometheus::BuildCounter()
                     .Name("ferry_remote_staging_sessions_total")
                     .Help("Remote staging sessions ended, by role and how")
                     .Register(r);
  add(sessions.Add({{"role", "source"}, {"end", "unpinned"}}),
      &remote_staging_stats::source_unpinned);
  add(sessions.Add({{"role", "source"}, {"end", "abandoned"}}),
      &remote_staging_stats::source_abandoned);
  add(sessions.Add({{"role", "requester"}, {"end", "completed"}}),
      &remote_staging_stats::completed);
  add(sessions.Add({{"role", "requester"}, {"end", "failed"}}), &remote_staging_stats::failed);
  add(sessions.Add({{"role", "requester"}, {"end", "cancelled"}}),
      &remote_staging_stats::cancelled);
  add(sessions.Add({{"role", "requester"}, {"end", "refused"}}),
      &remote_staging_stats::refused);
  add(prometheus::BuildCounter()
        .Name("ferry_remote_staging_effect_unknown_total")
        .Help("Failed remote WRITEs that may have changed the source's bytes")
        .Register(r)
        .Add({}),
      &remote_staging_stats::effect_unknown);
  auto& bytes = prometheus::BuildCounter()
                  .Name("ferry_remote_staging_bytes_total")
                  .Help("Remote staging bytes: copied on the source's device, read and "
                        "written by the requester")
                  .Register(r);
  add(bytes.Add({{"role", "source"}, {"direction", "copied"}}),
      &remote_staging_stats::source_bytes);
  add(bytes.Add({{"role", "requester"}, {"direction", "read"}}),
      &remote_staging_stats::bytes_read);
  add(bytes.Add({{"role", "requester"}, {"direction", "written"}}),
      &remote_staging_stats::bytes_written);
  add(prometheus::BuildCounter()
        .Name("ferry_remote_staging_retained_chunks_total")
        .Help("Source chunks kept out of the pool after a copy did not confirm")
        .Register(r)
        .Add({}),
      &remote_staging_stats::source_retained);
  auto& ucx = prometheus::BuildCounter()
                .Name("ferry_remote_staging_ucx_sessions_total")
                .Help("Remote staging sessions whose CROSS was one UCX GET per chunk, by role")
                .Register(r);
  add(ucx.Add({{"role", "source"}}), &remote_staging_stats::source_ucx_sessions);
  add(ucx.Add({{"role", "requester"}}), &remote_staging_stats::ucx_sessions);
}

void remote_staging_metrics::sync(const remote_staging_stats& s) {
  std::lock_guard<std::mutex> g{mu_};
  for (auto& c : counters_) {
    auto now = (s.*c.source).load();
    if (now > c.seen)
      c.series->Increment(static_cast<double>(now - c.seen));
    c.seen = now;
  }
  source_active_->Set(static_cast<double>(s.source_active.load()));
  requester_active_->Set(static_cast<double>(s.active.load()));
  queued_->Set(static_cast<double>(s.queued.load()));
}

} // namespace ferry
