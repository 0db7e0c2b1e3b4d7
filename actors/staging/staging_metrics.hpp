// staging_metrics: the series of the CUDA staging layer.
//   ferry_staging_available              1 when local GPU copies can run
//   ferry_staging_chunks{state}          pinned chunks by state (constructing,
//                                        idle, active, closing, retained)
//   ferry_staging_chunk_allocations_total  chunks allocated
//   ferry_staging_chunk_reuses_total     copies served by an idle chunk
//   ferry_staging_exhausted_total        copies refused: every chunk busy
//   ferry_staging_bytes_total{direction} bytes copied (to_host, to_device)
//   ferry_staging_copies_total{result}   copies by result (ok, failed,
//                                        cancelled, refused)
#pragma once

#include <mutex>

#include "staging/chunk_pool.hpp"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
} // namespace prometheus

namespace ferry {

struct staging_metrics {
  explicit staging_metrics(prometheus::Registry& registry);

  /// Brings the series up to the pool's counters and states.
  void sync(const staging::chunk_pool_stats& s);
  void set_available(bool on);

  prometheus::Counter* copies_ok;
  prometheus::Counter* copies_failed;
  prometheus::Counter* copies_cancelled;
  prometheus::Counter* copies_refused;

private:
  std::mutex mu_;
  staging::chunk_pool_stats last_; // what was already counted
  prometheus::Gauge* available_;
  prometheus::Gauge* constructing_;
  prometheus::Gauge* idle_;
  prometheus::Gauge* active_;
  prometheus::Gauge* closing_;
  prometheus::Gauge* retained_;
  prometheus::Counter* allocations_;
  prometheus::Counter* reuses_;
  prometheus::Counter* exhausted_;
  prometheus::Counter* to_host_;
  prometheus::Counter* to_device_;
};

} // namespace ferry
