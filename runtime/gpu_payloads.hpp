// gpu_payloads: GPU memory as a rendezvous payload, for plain code.
// - register_device: the owner side. The device range is copied through
//   the node's staging chunk pool (a staging worker) into host memory,
//   staged like any payload (registered memory when the node can, so a
//   consumer may GET it); the handle goes in messages as usual.
// - get_into_device: the consumer side. The payload comes over the chunked
//   or RDMA path exactly as a host get (the same leases, fallback and
//   metrics), then goes to the device through the pool. Its size is
//   checked against the device range before anything is fetched.
// Each local copy is bounded by the node's transfer timeout; one that has
// not started by then is cancelled (nothing copied). The device range must
// stay valid until the call returns.
// Must never: be used from inside an actor (it blocks its thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <caf/expected.hpp>

#include "protocol/data_handle.hpp"
#include "staging/staged_copy.hpp"

namespace ferry {

class node;

class gpu_payloads {
public:
  explicit gpu_payloads(node& n) : node_(&n) {}

  /// Stages `bytes` of device `device`'s memory at `src`; a non-zero ttl
  /// frees the slot after it.
  caf::expected<data_handle>
  register_device(int device, staging::device_ptr src, size_t bytes,
                  std::chrono::milliseconds ttl = std::chrono::milliseconds{0});

  /// Pulls `h` into device memory [dst, dst + capacity): (bytes written,
  /// lease id); release or detach the lease as after a host get. A payload
  /// larger than `capacity` is refused (payload_too_large) unfetched.
  caf::expected<std::pair<uint64_t, uint64_t>>
  get_into_device(const data_handle& h, int device, staging::device_ptr dst,
                  size_t capacity);

  /// One local copy on the staging workers; `keep` holds the host memory
  /// until the copy is over, even past this call's bound.
  caf::expected<uint64_t> copy(int device, staging::copy_job job,
                               std::shared_ptr<const void> keep);

private:
  node* node_;
};

} // namespace ferry
