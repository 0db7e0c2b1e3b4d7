#include "actors/rendezvous/owner_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace ferry {

namespace {

prometheus::Gauge* gauge(prometheus::Registry& r, const char* name,
                         const char* help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Counter* counter(prometheus::Registry& r, const char* name,
                             const char* help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

} // namespace

owner_metrics::owner_metrics(prometheus::Registry& r, path_metrics& p)
  : paths(&p),
    slots(gauge(r, "ferry_rendezvous_slots", "Slots staged on this owner")),
    staged_bytes(gauge(r, "ferry_rendezvous_staged_bytes",
                       "Bytes staged on this owner")),
    leases(gauge(r, "ferry_rendezvous_leases", "Read leases held on this owner")),
    chunks_served(counter(r, "ferry_rendezvous_chunks_served_total",
                          "Chunks answered to _rv_pull")),
    bytes_served(counter(r, "ferry_rendezvous_chunk_bytes_served_total",
                         "Bytes answered to _rv_pull")),
    eager_answers(counter(r, "ferry_rendezvous_eager_answers_total",
                          "Acquires answered with their payload inside")),
    eager_bytes(counter(r, "ferry_rendezvous_eager_bytes_served_total",
                        "Payload bytes inside acquire answers")),
    leases_expired(counter(r, "ferry_rendezvous_leases_expired_total",
                           "Chunked leases ended by their deadline")),
    slots_expired(counter(r, "ferry_rendezvous_slots_expired_total",
                          "Slots freed by their time-to-live")),
    leases_dropped_peer_down(
      &prometheus::BuildCounter()
         .Name("ferry_rendezvous_leases_dropped_total")
         .Help("Leases ended because the node holding them went away")
         .Register(r)
         .Add({{"reason", "peer_down"}})) {
  // nop
}

} // namespace ferry
