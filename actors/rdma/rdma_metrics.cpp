#include "actors/rdma/rdma_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "rdma/control_channel_choice.hpp"
#include "rdma/control_protocol.hpp"

namespace ferry {

rdma_metrics::rdma_metrics(prometheus::Registry& r) {
  get_duration = &prometheus::BuildHistogram()
                    .Name("ferry_rendezvous_rdma_get_duration_seconds")
                    .Help("GET time, without the acquire round trip")
                    .Register(r)
                    .Add({}, prometheus::Histogram::BucketBoundaries{
                               1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05,
                               0.1, 0.5, 1, 5});
  leases_reaped = &prometheus::BuildCounter()
                     .Name("ferry_rendezvous_rdma_leases_reaped_total")
                     .Help("RDMA leases the owner's reaper force-released")
                     .Register(r)
                     .Add({});
  registered_bytes = &prometheus::BuildGauge()
                        .Name("ferry_rdma_registered_bytes")
                        .Help("Registered bytes, pool and external")
                        .Register(r)
                        .Add({});
  auto& regs = prometheus::BuildCounter()
                 .Name("ferry_rdma_registrations_total")
                 .Help("Memory registrations, by kind")
                 .Register(r);
  arena_registrations = &regs.Add({{"kind", "arena"}});
  external_registrations = &regs.Add({{"kind", "external"}});
  live_regions = &prometheus::BuildGauge()
                    .Name("ferry_rdma_live_regions")
                    .Help("Regions the backend holds registered")
                    .Register(r)
                    .Add({});
  abandoned_gets = &prometheus::BuildGauge()
                      .Name("ferry_ucx_abandoned_gets")
                      .Help("GETs given up (deadline passed or peer gone) that "
                            "UCX has not finished; their destinations stay held")
                      .Register(r)
                      .Add({});
  ucx_endpoints = &prometheus::BuildGauge()
                     .Name("ferry_ucx_endpoints")
                     .Help("UCX endpoints this node holds open to peers")
                     .Register(r)
                     .Add({});
  auto& closed = prometheus::BuildCounter()
                   .Name("ferry_ucx_endpoints_closed_total")
                   .Help("UCX endpoints closed, by reason (idle: the idle reaper; "
                         "peer_down: the peer left or came back as a new "
                         "incarnation; goodbye: the peer closed its own; "
                         "shutdown: this node stopped; quarantine: the owner let "
                         "a quarantined block go after its longest hold)")
                   .Register(r);
  for (auto reason : {endpoint_close_reason::idle, endpoint_close_reason::peer_down,
                      endpoint_close_reason::goodbye, endpoint_close_reason::shutdown,
                      endpoint_close_reason::quarantine})
    endpoints_closed[static_cast<int>(reason)] = &closed.Add({{"reason", to_string(reason)}});
  arena_utilization = &prometheus::BuildGauge()
                         .Name("ferry_rdma_arena_utilization_ratio")
                         .Help("Bytes granted out of the arena pool over the bytes "
                               "its arenas map (0 with no arena)")
                         .Register(r)
                         .Add({});
  quarantined_bytes = &prometheus::BuildGauge()
                         .Name("ferry_rdma_quarantined_bytes")
                         .Help("Registered bytes of freed payloads kept out of reuse "
                               "while a peer's GET given up may still read them")
                         .Register(r)
                         .Add({});
  auto& released = prometheus::BuildCounter()
                     .Name("ferry_rdma_quarantine_released_total")
                     .Help("Quarantined blocks let go, by what cleared them (fence: "
                           "the peer's engine had ended every GET it posted to us; "
                           "peer_down: the peer went away; forced: the longest "
                           "hold passed, the endpoint to the peer closed first)")
                     .Register(r);
  for (auto c : {quarantine_cleared_by::fence, quarantine_cleared_by::peer_down,
                 quarantine_cleared_by::forced})
    quarantine_released[static_cast<int>(c)] = &released.Add({{"cleared_by", to_string(c)}});
  auto& peers = prometheus::BuildGauge()
                  .Name("ferry_control_channel")
                  .Help("Peers whose rendezvous calls travel by each control channel "
                        "(ucx_am: UCX active messages; caf: CAF requests)")
                  .Register(r);
  auto& calls = prometheus::BuildCounter()
                  .Name("ferry_control_calls_total")
                  .Help("Rendezvous calls this node's consumers made, by control channel")
                  .Register(r);
  for (auto c : {control_channel::caf, control_channel::ucx_am}) {
    control_peers[static_cast<int>(c)] = &peers.Add({{"channel", to_string(c)}});
    control_calls[static_cast<int>(c)] = &calls.Add({{"channel", to_string(c)}});
  }
  static_assert(sizeof(control_dropped) / sizeof(control_dropped[0]) == control_drop_reasons);
  auto& dropped = prometheus::BuildCounter()
                    .Name("ferry_control_frames_dropped_total")
                    .Help("Control frames the UCX engine dropped, by reason (malformed, "
                          "unknown_peer, bad_token: not from a registered peer with "
                          "the pair's token; unknown_call, wrong_peer, wrong_op: an "
                          "answer to no call of ours; bad_error_body)")
                    .Register(r);
  for (size_t i = 0; i < control_drop_reasons; ++i)
    control_dropped[i] = &dropped.Add({{"reason", to_string(static_cast<control_drop>(i))}});
  auto& probes = prometheus::BuildCounter()
                   .Name("ferry_control_probes_total")
                   .Help("Round trips over the control channel before a peer's calls "
                         "take it (ok: they do; failed: no answer by the deadline, the "
                         "peer's calls stay on CAF requests)")
                   .Register(r);
  control_probes[0] = &probes.Add({{"result", "ok"}});
  control_probes[1] = &probes.Add({{"result", "failed"}});
  control_fallbacks = &prometheus::BuildCounter()
                         .Name("ferry_control_fallbacks_total")
                         .Help("Peers moved back to CAF requests after UCX failed a "
                               "control frame's send, here or at the peer")
                         .Register(r)
                         .Add({});
}

const char* to_string(quarantine_cleared_by c) {
  switch (c) {
    case quarantine_cleared_by::fence: return "fence";
    case quarantine_cleared_by::peer_down: return "peer_down";
    case quarantine_cleared_by::forced: return "forced";
  }
  return "unknown";
}

const char* to_string(endpoint_close_reason r) {
  switch (r) {
    case endpoint_close_reason::idle: return "idle";
    case endpoint_close_reason::peer_down: return "peer_down";
    case endpoint_close_reason::goodbye: return "goodbye";
    case endpoint_close_reason::shutdown: return "shutdown";
    case endpoint_close_reason::quarantine: return "quarantine";
  }
  return "unknown";
}

} // namespace ferry
