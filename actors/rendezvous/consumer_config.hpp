// consumer_config: how a consumer drives its transfers.
#pragma once

#include <chrono>
#include <cstdint>

namespace ferry {

struct consumer_config {
  // Bound on every request to an owner (acquire, each pull, detach, ...).
  std::chrono::milliseconds request_timeout{10000};
  // Bound on one GET (the lease renewals keep the owner's side alive).
  std::chrono::milliseconds transfer_timeout{300000};
  // The deadline of the lease a transfer holds while it runs (sent as the
  // acquire's lease_ms; pulls and renewals every half of it keep it alive).
  // Once the get delivered, its hold (a quarter of it later, unless the
  // caller ended the lease first) makes the lease one with no deadline.
  std::chrono::milliseconds transfer_lease{30000};
  // Chunk pulls kept in flight per transfer.
  uint32_t pull_window = 8;
  // A payload of at most this many bytes comes inside the acquire's answer
  // (the eager acquire: one round trip); 0: always the plain acquire.
  uint64_t eager_max = 16 * 1024;
  // staged_payload_max: the largest payload this node takes (0: no limit).
  uint64_t staged_payload_max = 0;
  // This node has an RDMA registry (UCX) and its kill switch is off.
  bool rdma_configured = false;
  bool rdma_enabled = true;
  // A plain get's GET lands straight in the result buffer instead of a
  // registered block that is then copied out (set when no transport needs
  // registered local memory: ucx_context::registers_without_pinning).
  bool get_into_result = false;
  // Test hook (honoured only in FERRY_TEST_HOOKS builds): the handler of an
  // acquire's answer throws once the answer is applied, as a bug would.
  bool test_throw_on_acquire_answer = false;
};

} // namespace ferry
