// endpoint_activity: the rules of the UCX endpoint idle reaper, as plain
// data. The UCX engine tells it when an endpoint to a peer opens, when an
// operation on it starts and finishes, and when it closes; it answers which
// endpoints are idle now and when the next scan is due.
//
// - Off unless a timeout is set; a timeout below idle_timeout_floor rises to
//   it (500 ms: well above one endpoint's wireup).
// - An endpoint is idle only when no operation on it is outstanding and none
//   started or finished within the timeout: a start and a completion each
//   restart its clock, and so does its opening (the moment ucp_ep_create
//   returned).
// - The scan runs every half timeout, and at least once a second.
// - `blocked` (descriptors of this node are out: a peer may be reading our
//   memory over the endpoint pair UCX shares with ours) holds every close
//   back; the clocks keep running.
// - A goodbye from the peer (it closed its own endpoint to us) closes ours
//   as soon as nothing is outstanding on it.
// Not thread-safe: the engine's thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace ferry {

class endpoint_activity {
public:
  using clock_type = std::chrono::steady_clock;
  using time_point = clock_type::time_point;

  static constexpr std::chrono::milliseconds idle_timeout_floor{500};
  static constexpr std::chrono::milliseconds longest_scan_period{1000};

  /// `idle_timeout` empty: the reaper is off (nothing is ever idle).
  explicit endpoint_activity(std::optional<std::chrono::milliseconds> idle_timeout);

  bool reaping() const { return timeout_.has_value(); }
  /// The timeout in force (after the floor); zero when off.
  std::chrono::milliseconds timeout() const;
  std::chrono::milliseconds scan_period() const;

  void opened(uint64_t peer, time_point now);
  void started(uint64_t peer, time_point now);
  /// An operation ended (done, failed or abandoned by UCX at last).
  void finished(uint64_t peer, time_point now);
  void closed(uint64_t peer);

  /// The peer said goodbye: true when ours can close now; otherwise it
  /// closes when its last operation finishes (goodbye_ready()).
  bool goodbye(uint64_t peer);
  /// Peers whose goodbye waited and that have nothing outstanding now.
  std::vector<uint64_t> goodbye_ready() const;

  bool scan_due(time_point now) const { return reaping() && now >= next_scan_; }
  time_point next_scan() const { return next_scan_; }
  /// The peers whose endpoints are idle at `now` (none when `blocked`);
  /// schedules the next scan.
  std::vector<uint64_t> scan(time_point now, bool blocked);

  size_t open() const { return eps_.size(); }
  size_t outstanding(uint64_t peer) const;

private:
  struct entry {
    time_point last_use;
    size_t outstanding = 0;
    bool goodbye = false;
  };

  std::optional<std::chrono::milliseconds> timeout_;
  time_point next_scan_;
  std::map<uint64_t, entry> eps_;
};

} // namespace ferry
