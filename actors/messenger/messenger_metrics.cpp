#include "actors/messenger/messenger_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace ferry {

messenger_metrics::messenger_metrics(prometheus::Registry& r) {
  calls = &prometheus::BuildCounter()
             .Name("ferry_messenger_calls_total")
             .Help("Messages this node's handlers took, by handler and result")
             .Register(r);
  staged_payloads = &prometheus::BuildCounter()
                       .Name("ferry_messenger_staged_payloads_total")
                       .Help("Payloads this node staged for a send (above the "
                             "staging threshold)")
                       .Register(r)
                       .Add({});
  auto& fetches = prometheus::BuildCounter()
                    .Name("ferry_messenger_fetches_total")
                    .Help("Staged payloads this node fetched, by result")
                    .Register(r);
  fetches_ok = &fetches.Add({{"result", "ok"}});
  fetches_timeout = &fetches.Add({{"result", "timeout"}});
  fetches_over_limit = &fetches.Add({{"result", "over_limit"}});
  fetches_failed = &fetches.Add({{"result", "failed"}});
  fetches_in_flight = &prometheus::BuildGauge()
                         .Name("ferry_messenger_fetches_in_flight")
                         .Help("Fetches of staged payloads running now")
                         .Register(r)
                         .Add({});
  streams = &prometheus::BuildGauge()
               .Name("ferry_messenger_streams")
               .Help("Messenger streams open now (as producer or consumer)")
               .Register(r)
               .Add({});
  warm_buffer_bytes = &prometheus::BuildGauge()
                         .Name("ferry_messenger_warm_buffer_bytes")
                         .Help("Large buffers (handlers' payloads, results given back) kept warm for the next fetched payload or get result")
                         .Register(r)
                         .Add({});
  warm_buffer_reuses = &prometheus::BuildCounter()
                          .Name("ferry_messenger_warm_buffer_reuses_total")
                          .Help("Fetched payloads and get results that landed in a warm buffer")
                          .Register(r)
                          .Add({});
  warm_buffer_prefills = &prometheus::BuildCounter()
                            .Name("ferry_messenger_warm_buffer_prefills_total")
                            .Help("Warm buffers prepared ahead (faulted in on a background thread) for the next plain get result of a size just served, and kept")
                            .Register(r)
                            .Add({});
}

void messenger_metrics::count_call(const std::string& handler, const char* result) {
  calls->Add({{"handler", handler}, {"result", result}}).Increment();
}

} // namespace ferry
