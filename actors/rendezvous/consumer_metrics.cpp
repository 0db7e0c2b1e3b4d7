#include "actors/rendezvous/consumer_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/registry.h>

namespace ferry {

consumer_metrics::consumer_metrics(prometheus::Registry& r, path_metrics& p)
  : paths(&p) {
  chunks_pulled = &prometheus::BuildCounter()
                     .Name("ferry_rendezvous_chunks_pulled_total")
                     .Help("Chunks this node pulled as a consumer")
                     .Register(r)
                     .Add({});
  bytes_pulled = &prometheus::BuildCounter()
                    .Name("ferry_rendezvous_bytes_pulled_total")
                    .Help("Payload bytes this node received as a consumer")
                    .Register(r)
                    .Add({});
  eager_gets = &prometheus::BuildCounter()
                  .Name("ferry_rendezvous_eager_gets_total")
                  .Help("Gets whose payload came inside the acquire's answer "
                        "(no pull: one round trip)")
                  .Register(r)
                  .Add({});
  auto& gets = prometheus::BuildCounter()
                 .Name("ferry_rendezvous_gets_total")
                 .Help("Gets this node finished as a consumer, by result")
                 .Register(r);
  gets_ok = &gets.Add({{"result", "ok"}});
  gets_failed = &gets.Add({{"result", "error"}});
  consumers_started = &prometheus::BuildCounter()
                         .Name("ferry_rendezvous_consumers_started_total")
                         .Help("Consumer actors started; a consumer that "
                               "finished cleanly serves the next get")
                         .Register(r)
                         .Add({});
  auto& holds = prometheus::BuildCounter()
                  .Name("ferry_rendezvous_gets_held_total")
                  .Help("Finished GETs whose lease hold was sent to the owner, or "
                        "dropped because the caller ended the lease first")
                  .Register(r);
  holds_sent = &holds.Add({{"outcome", "sent"}});
  holds_dropped = &holds.Add({{"outcome", "dropped"}});
}

} // namespace ferry
