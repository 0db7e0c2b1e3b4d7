// owner_metrics: the series the owner records (besides path decisions).
#pragma once

namespace prometheus {
class Registry;
class Counter;
class Gauge;
} // namespace prometheus

namespace ferry {

class path_metrics;

struct owner_metrics {
  owner_metrics(prometheus::Registry& registry, path_metrics& paths);

  path_metrics* paths;
  prometheus::Gauge* slots;          // ferry_rendezvous_slots
  prometheus::Gauge* staged_bytes;   // ferry_rendezvous_staged_bytes
  prometheus::Gauge* leases;         // ferry_rendezvous_leases
  prometheus::Counter* chunks_served;   // ferry_rendezvous_chunks_served_total
  prometheus::Counter* bytes_served;    // ferry_rendezvous_chunk_bytes_served_total
  prometheus::Counter* eager_answers;   // ferry_rendezvous_eager_answers_total
  prometheus::Counter* eager_bytes;     // ferry_rendezvous_eager_bytes_served_total
  prometheus::Counter* leases_expired;  // ferry_rendezvous_leases_expired_total
  prometheus::Counter* slots_expired;   // ferry_rendezvous_slots_expired_total
  // ferry_rendezvous_leases_dropped_total{reason="peer_down"}: leases ended
  // because the node that held them went away.
  prometheus::Counter* leases_dropped_peer_down;
};

} // namespace ferry
