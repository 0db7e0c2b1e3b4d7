// path_metrics: the ferry_rendezvous_rdma_path_total{path, reason} series.
// Both roles record into it (the owner at staging and at each acquire, the
// consumer at its offer, its fallbacks and each completed GET), so one small
// type owns the family and the label vocabulary.
// Each series is looked up in the family once and then kept: a lookup
// builds and hashes its labels under the family's lock (about 0.4 us, and
// every get counts on each side). A series is made by its first count or
// its first read.
// Must never: invent labels outside the spec's list.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <string>

namespace prometheus {
class Registry;
template <class T>
class Family;
class Counter;
} // namespace prometheus

namespace ferry {

enum class transfer_path { chunked, rdma }; // rdma stays last

inline constexpr size_t transfer_path_count = static_cast<size_t>(transfer_path::rdma) + 1;

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
  get_failed, // stays last: path_reason_count, and the bench and soak read them in order
};

inline constexpr size_t path_reason_count = static_cast<size_t>(path_reason::get_failed) + 1;

const char* to_string(transfer_path p);
const char* to_string(path_reason r);

class path_metrics {
public:
  explicit path_metrics(prometheus::Registry& registry);

  void count(transfer_path path, path_reason reason);

  /// The current value of one series (tests, the bench, the soak, the job
  /// coordinator); a series never counted reads 0, and is made by the read.
  double value(transfer_path path, path_reason reason);

private:
  prometheus::Counter& series(transfer_path path, path_reason reason);

  prometheus::Family<prometheus::Counter>* family_;
  // Each (path, reason) pair's counter once looked up; null until then.
  // Both roles count from their own threads: a race stores the same pointer.
  std::array<std::atomic<prometheus::Counter*>, transfer_path_count * path_reason_count>
    series_{};
};

} // namespace ferry
