// messenger_metrics: the series the messenger records.
//   ferry_messenger_calls_total{handler,result}  messages this node's handlers
//       took (result: ok, error, unknown_handler, fetch_failed); a name
//       nobody bound counts under handler="(unknown)", so a peer cannot
//       grow the label set
//   ferry_messenger_staged_payloads_total  payloads this node staged for a send
//   ferry_messenger_fetches_total{result}  staged payloads this node fetched
//       (ok, timeout, over_limit, failed)
//   ferry_messenger_fetches_in_flight      fetches running now
//   ferry_messenger_streams                streams open now (both ends)
//   ferry_messenger_warm_buffer_bytes      payload buffers kept warm now
//   ferry_messenger_warm_buffer_reuses_total  fetched payloads that landed
//       in a warm buffer (no fresh pages)
//   ferry_messenger_warm_buffer_prefills_total  buffers prepared ahead for
//       the next plain get result and kept (result_prefiller.hpp)
#pragma once

#include <string>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
template <class T>
class Family;
} // namespace prometheus

namespace ferry {

struct messenger_metrics {
  explicit messenger_metrics(prometheus::Registry& registry);

  void count_call(const std::string& handler, const char* result);

  prometheus::Family<prometheus::Counter>* calls;
  prometheus::Counter* staged_payloads;
  prometheus::Counter* fetches_ok;
  prometheus::Counter* fetches_timeout;
  prometheus::Counter* fetches_over_limit;
  prometheus::Counter* fetches_failed;
  prometheus::Gauge* fetches_in_flight;
  prometheus::Gauge* streams;
  prometheus::Gauge* warm_buffer_bytes;
  prometheus::Counter* warm_buffer_reuses;
  prometheus::Counter* warm_buffer_prefills;
};

} // namespace ferry
