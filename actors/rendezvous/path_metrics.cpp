#include "actors/rendezvous/path_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

namespace ferry {

const char* to_string(transfer_path p) {
  return p == transfer_path::rdma ? "rdma" : "chunked";
}

const char* to_string(path_reason r) {
  switch (r) {
    case path_reason::ok: return "ok";
    case path_reason::no_offer: return "no_offer";
    case path_reason::not_configured: return "not_configured";
    case path_reason::kill_switch: return "kill_switch";
    case path_reason::not_pinned: return "not_pinned";
    case path_reason::below_min: return "below_min";
    case path_reason::draining: return "draining";
    case path_reason::budget: return "budget";
    case path_reason::pool_exhausted: return "pool_exhausted";
    case path_reason::decode_error: return "decode_error";
    case path_reason::get_failed: return "get_failed";
  }
  return "unknown";
}

path_metrics::path_metrics(prometheus::Registry& registry)
  : family_(&prometheus::BuildCounter()
               .Name("ferry_rendezvous_rdma_path_total")
               .Help("Rendezvous path decisions, with the reason; "
                     "reason=\"ok\" is the only path=\"rdma\" label")
               .Register(registry)) {
  // nop
}

prometheus::Counter& path_metrics::series(transfer_path path, path_reason reason) {
  auto& slot = series_.at(static_cast<size_t>(path) * path_reason_count
                         + static_cast<size_t>(reason));
  if (auto* known = slot.load(std::memory_order_acquire))
    return *known;
  auto& made = family_->Add({{"path", to_string(path)}, {"reason", to_string(reason)}});
  slot.store(&made, std::memory_order_release);
  return made;
}

void path_metrics::count(transfer_path path, path_reason reason) {
  series(path, reason).Increment();
}

double path_metrics::value(transfer_path path, path_reason reason) {
  return series(path, reason).Value();
}

} // namespace ferry
