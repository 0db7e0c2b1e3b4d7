// path_metrics: the ferry_rendezvous_rdma_path_total{path, reason} series.
// Both roles record into it (the owner at staging and at each acquire, the
// consumer at its offer, its fallbacks and each completed GET), so one small
// type owns the family and the label vocabulary.
// Each series is looked up in the family once and then kept (a lookup
// builds and hashes its labels under the family's lock: about 2 us, on
// every get's path).
// Must never: invent labels outside the spec's list, or create a series
// before it is first counted (a scrape shows only the pairs that happened).
#pragma once

#include <array>
#include <atomic>
#include <string>

namespace prometheus {
class Registry;
template <class T>
class Family;
class Counter;
} // namespace prometheus

namespace ferry {

enum class transfer_path { chunked, rdma };

/// The reason labels of the spec's Metrics table.
enum class path_reason {
  ok,
  no_offer,
  not_configured,
  kill_switch,
  not_pinned,
  below_min,
  draining,
  budget,
  pool_exhausted,
  decode_error,
  get_failed,
};

const char* to_string(transfer_path p);
const char* to_string(path_reason r);

class path_metrics {
public:
  explicit path_metrics(prometheus::Registry& registry);

  void count(transfer_path path, path_reason reason);

  /// The current value of one series (for tests and `ferry stat`).
  double value(transfer_path path, path_reason reason);

private:
  static constexpr size_t reasons = static_cast<size_t>(path_reason::get_failed) + 1;

  prometheus::Counter& series(transfer_path path, path_reason reason);

  prometheus::Family<prometheus::Counter>* family_;
  // Each (path, reason) pair's counter once looked up; null until then.
  // Both roles count from their own threads: a race stores the same pointer.
  std::array<std::atomic<prometheus::Counter*>, 2 * reasons> series_{};
};

} // namespace ferry
