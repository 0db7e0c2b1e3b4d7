#include "actors/rdma_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

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
}

} // namespace ferry
