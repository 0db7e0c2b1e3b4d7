// consumer_metrics: the series a consumer records (besides path decisions).
#pragma once

namespace prometheus {
class Registry;
class Counter;
} // namespace prometheus

namespace ferry {

class path_metrics;

struct consumer_metrics {
  consumer_metrics(prometheus::Registry& registry, path_metrics& paths);

  path_metrics* paths;
  prometheus::Counter* chunks_pulled;  // ferry_rendezvous_chunks_pulled_total
  prometheus::Counter* bytes_pulled;   // ferry_rendezvous_bytes_pulled_total
  prometheus::Counter* eager_gets;     // ferry_rendezvous_eager_gets_total
  prometheus::Counter* gets_ok;        // ferry_rendezvous_gets_total{result="ok"}
  prometheus::Counter* gets_failed;    // ferry_rendezvous_gets_total{result="error"}
  prometheus::Counter* consumers_started; // ferry_rendezvous_consumers_started_total
  // ferry_rendezvous_gets_held_total{outcome}: a finished GET's hold "sent"
  // to its owner, or "dropped" (the caller ended the lease before it was due)
  prometheus::Counter* holds_sent;
  prometheus::Counter* holds_dropped;
};

} // namespace ferry
