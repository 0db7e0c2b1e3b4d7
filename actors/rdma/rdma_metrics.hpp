// rdma_metrics: the RDMA series of the spec's Metrics table (besides path
// decisions): GET time, reaped leases, registered bytes, registrations and
// live regions; UCX endpoints open and closed; arena utilisation.
#pragma once

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
} // namespace prometheus

namespace ferry {

struct rdma_metrics {
  explicit rdma_metrics(prometheus::Registry& registry);

  prometheus::Histogram* get_duration;      // ferry_rendezvous_rdma_get_duration_seconds
  prometheus::Counter* leases_reaped;       // ferry_rendezvous_rdma_leases_reaped_total
  prometheus::Gauge* registered_bytes;      // ferry_rdma_registered_bytes
  prometheus::Counter* arena_registrations; // ferry_rdma_registrations_total{kind="arena"}
  prometheus::Counter* external_registrations; // ...{kind="external"}
  prometheus::Gauge* live_regions;          // ferry_rdma_live_regions
  prometheus::Gauge* abandoned_gets;        // ferry_ucx_abandoned_gets
  prometheus::Gauge* ucx_endpoints;         // ferry_ucx_endpoints (open)
  // ferry_ucx_endpoints_closed_total{reason}, indexed by endpoint_close_reason
  prometheus::Counter* endpoints_closed[5];
  prometheus::Gauge* arena_utilization;     // ferry_rdma_arena_utilization_ratio
  // The owner's quarantine (actors/rendezvous/rdma_quarantine.hpp):
  // ferry_rdma_quarantined_bytes, and the blocks it let go,
  // ferry_rdma_quarantine_released_total{cleared_by}, indexed by
  // quarantine_cleared_by.
  prometheus::Gauge* quarantined_bytes;
  prometheus::Counter* quarantine_released[3];
  // The control channel (issue 23). ferry_control_channel{channel}: peers
  // whose rendezvous calls go by each channel (0 caf, 1 ucx_am);
  // ferry_control_calls_total{channel}: calls this node's consumers made;
  // ferry_control_frames_dropped_total{reason}, indexed by control_drop.
  prometheus::Gauge* control_peers[2];
  prometheus::Counter* control_calls[2];
  prometheus::Counter* control_dropped[7];
  // ferry_control_probes_total{result}: the round trip before a peer's
  // calls take the channel (0 ok, 1 failed); ferry_control_fallbacks_total:
  // peers moved back to CAF after a failed send.
  prometheus::Counter* control_probes[2];
  prometheus::Counter* control_fallbacks;
};

/// What let a quarantined block go (the cleared_by label).
enum class quarantine_cleared_by { fence, peer_down, forced };
const char* to_string(quarantine_cleared_by c);

/// Why the UCX engine closed an endpoint (the reason label).
enum class endpoint_close_reason { idle, peer_down, goodbye, shutdown, quarantine };
const char* to_string(endpoint_close_reason r);

} // namespace ferry
