#include "bench/ucx_peer_link.hpp"

#ifdef FERRY_BENCH_WITH_UCX

#include <chrono>

namespace ferry::bench {

std::string ucx_peer_link::open(const std::vector<uint8_t>& peer_address,
                                bool active_messages) {
  ucx_context_config config;
  config.active_messages = active_messages;
  auto ctx = ucx_context::create(config);
  if (!ctx)
    return ctx.error_message();
  context.emplace(std::move(*ctx));
  auto w = ucx_worker::create(*context);
  if (!w)
    return w.error_message();
  worker.emplace(std::move(*w));
  auto ep = ucx_endpoint::connect(*worker, peer_address.data(), peer_address.size());
  if (!ep)
    return ep.error_message();
  endpoint.emplace(std::move(*ep));
  return {};
}

void ucx_peer_link::close() {
  if (endpoint)
    endpoint->close(std::chrono::seconds{1});
  endpoint.reset();
  worker.reset();
  context.reset();
}

} // namespace ferry::bench

#endif
