// remote_staging_metrics: the Prometheus series of remote staging, brought
// up to the node's remote_staging_stats (the atomics the actors count) by
// sync(), which the node calls before each scrape.
//   ferry_remote_staging_active{role}          sessions running (source,
//                                              requester)
//   ferry_remote_staging_queued                requester sessions waiting
//   ferry_remote_staging_pins_total{result}    Pins on this source (ok, refused)
//   ferry_remote_staging_delegates_total       source copies started
//   ferry_remote_staging_sessions_total{role,end}  sessions ended: source
//                                              (unpinned, abandoned),
//                                              requester (completed, failed,
//                                              cancelled, refused)
//   ferry_remote_staging_effect_unknown_total  failed WRITEs that may have
//                                              changed the source's bytes
//   ferry_remote_staging_bytes_total{role,direction}  source: copied on its
//                                              device; requester: read, written
//   ferry_remote_staging_retained_chunks_total chunks kept after an
//                                              unconfirmed drain (source)
//   ferry_remote_staging_ucx_sessions_total{role}  sessions whose CROSS was
//                                              one UCX GET per chunk
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
} // namespace prometheus

#include "actors/staging/remote_staging_stats.hpp"

namespace ferry {

class remote_staging_metrics {
public:
  explicit remote_staging_metrics(prometheus::Registry& registry);

  /// Brings every series up to `s` (counters by what grew since the last call).
  void sync(const remote_staging_stats& s);

private:
  using stat_counter = std::atomic<uint64_t> remote_staging_stats::*;
  struct counted {
    prometheus::Counter* series;
    stat_counter source; // the stats' counter the series follows
    uint64_t seen = 0;
  };
  void add(prometheus::Counter& c, stat_counter source);

  std::mutex mu_;
  std::vector<counted> counters_;
  prometheus::Gauge* source_active_;
  prometheus::Gauge* requester_active_;
  prometheus::Gauge* queued_;
};

} // namespace ferry
