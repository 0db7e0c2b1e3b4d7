#include "runtime/node_config.hpp"

#include <algorithm>
#include <thread>

namespace ferry {

size_t node_config::effective_scheduler_threads() const {
  if (scheduler_threads > 0)
    return scheduler_threads;
  size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(hw / 2, 1, 4);
}

ferry::owner_config node_config::owner_config() const {
  ferry::owner_config c;
  c.chunk_size = chunk_size;
  c.sweep_period = std::chrono::milliseconds{lease_sweep_ms};
  c.rdma_configured = false; // the node sets it once UCX is up
  c.rdma_enabled = rdma_enabled;
  c.rdma_min_bytes = rdma_min_bytes;
  c.eager_max = eager_max;
  c.lease_timeout = effective_lease_timeout();
  c.quarantine_max_hold = std::chrono::milliseconds{std::max<uint64_t>(rdma_quarantine_max_ms, 1)};
  c.request_timeout = request_timeout();
  c.transfer_timeout = transfer_timeout();
  c.register_in_place_min = 0; // the node sets it once UCX is up
  c.stall_pulls_from = test_stall_pulls_from;
  c.test_descriptor_fault = test_descriptor_fault;
  return c;
}

ferry::consumer_config node_config::consumer_config() const {
  ferry::consumer_config c;
  c.request_timeout = request_timeout();
  c.transfer_timeout = transfer_timeout();
  c.transfer_lease = effective_lease_timeout();
  c.pull_window = pull_window == 0 ? 1 : pull_window;
  c.eager_max = eager_max;
  c.staged_payload_max = staged_payload_max;
  c.rdma_configured = false;
  c.rdma_enabled = rdma_enabled;
  return c;
}

ferry::messenger_config node_config::messenger_config() const {
  ferry::messenger_config c;
  c.staging_threshold = staging_threshold;
  c.staged_fetch_timeout = std::chrono::milliseconds{
    staged_fetch_timeout_ms > 0 ? staged_fetch_timeout_ms : transfer_timeout_ms};
  c.request_timeout = request_timeout();
  c.transfer_timeout = transfer_timeout();
  return c;
}

} // namespace ferry
