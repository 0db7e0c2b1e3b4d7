#include "actors/staging/staging_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace ferry {

staging_metrics::staging_metrics(prometheus::Registry& r) {
  available_ = &prometheus::BuildGauge()
                  .Name("ferry_staging_available")
                  .Help("1 when this node can run local GPU copies")
                  .Register(r)
                  .Add({});
  auto& chunks = prometheus::BuildGauge()
                   .Name("ferry_staging_chunks")
                   .Help("Pinned staging chunks, by state")
                   .Register(r);
  constructing_ = &chunks.Add({{"state", "constructing"}});
  idle_ = &chunks.Add({{"state", "idle"}});
  active_ = &chunks.Add({{"state", "active"}});
  closing_ = &chunks.Add({{"state", "closing"}});
  retained_ = &chunks.Add({{"state", "retained"}});
  allocations_ = &prometheus::BuildCounter()
                    .Name("ferry_staging_chunk_allocations_total")
                    .Help("Pinned staging chunks allocated")
                    .Register(r)
                    .Add({});
  reuses_ = &prometheus::BuildCounter()
               .Name("ferry_staging_chunk_reuses_total")
               .Help("Local GPU copies served by an idle chunk")
               .Register(r)
               .Add({});
  exhausted_ = &prometheus::BuildCounter()
                  .Name("ferry_staging_exhausted_total")
                  .Help("Local GPU copies refused because every chunk was busy")
                  .Register(r)
                  .Add({});
  auto& bytes = prometheus::BuildCounter()
                  .Name("ferry_staging_bytes_total")
                  .Help("Bytes copied through staging chunks, by direction")
                  .Register(r);
  to_host_ = &bytes.Add({{"direction", "to_host"}});
  to_device_ = &bytes.Add({{"direction", "to_device"}});
  auto& copies = prometheus::BuildCounter()
                   .Name("ferry_staging_copies_total")
                   .Help("Local GPU copies, by result")
                   .Register(r);
  copies_ok = &copies.Add({{"result", "ok"}});
  copies_failed = &copies.Add({{"result", "failed"}});
  copies_cancelled = &copies.Add({{"result", "cancelled"}});
  copies_refused = &copies.Add({{"result", "refused"}});
}

void staging_metrics::set_available(bool on) {
  available_->Set(on ? 1 : 0);
}

void staging_metrics::sync(const staging::chunk_pool_stats& s) {
  std::lock_guard<std::mutex> g{mu_};
  auto add = [](prometheus::Counter* c, uint64_t now, uint64_t& was) {
    if (now > was)
      c->Increment(static_cast<double>(now - was));
    was = now;
  };
  add(allocations_, s.allocations, last_.allocations);
  add(reuses_, s.reuses, last_.reuses);
  add(exhausted_, s.exhausted, last_.exhausted);
  add(to_host_, s.bytes_to_host, last_.bytes_to_host);
  add(to_device_, s.bytes_to_device, last_.bytes_to_device);
  constructing_->Set(static_cast<double>(s.constructing));
  idle_->Set(static_cast<double>(s.idle));
  active_->Set(static_cast<double>(s.active));
  closing_->Set(static_cast<double>(s.closing));
  retained_->Set(static_cast<double>(s.retained));
}

} // namespace ferry
