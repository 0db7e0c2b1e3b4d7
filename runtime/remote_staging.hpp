// remote_staging: remote staging for plain code (docs/remote-staging.md).
// A requester reads a peer's device range into its own device memory, or
// writes its device memory into the peer's range, through both nodes'
// pinned chunks, without staging a payload:
// - the source exposes a device range (expose) and passes the range's name
//   (remote_device_range, as text) in a message; it needs --remote-staging;
// - the requester reads or writes any part of it (read, write); its
//   session runs on one of the node's requester shards, bounded by the
//   node's transfer timeout (queue time included).
// A failed READ leaves the local range partly written; a failed WRITE
// whose outcome says remote_effect::unknown may have changed the source's
// bytes and is never retried here.
// Must never: be used from inside an actor (it blocks its thread).
#pragma once

#include <cstdint>

#include <caf/expected.hpp>

#include "actors/staging/remote_stager.hpp"
#include "protocol/remote_staging_wire.hpp"
#include "staging/device_exposures.hpp"

namespace ferry {

class node;

/// Why [offset, offset + length) is not a non-empty span inside `r`, or none.
caf::error remote_span_error(const remote_device_range& r, uint64_t offset, uint64_t length);

class remote_staging {
public:
  explicit remote_staging(node& n) : node_(&n) {}

  /// Exposes [ptr, ptr + bytes) of `device` to peers' sessions.
  caf::expected<remote_device_range> expose(int device, staging::device_ptr ptr,
                                            uint64_t bytes, staging::device_access access);
  /// Ends an exposure; refused while a session holds a loan on it.
  caf::error withdraw(const remote_device_range& r);

  /// READ: the range's bytes [offset, offset + length) into `dst`.
  remote_stage_outcome read(const remote_device_range& r, uint64_t offset, int device,
                            staging::device_ptr dst, uint64_t length);
  /// WRITE: `length` bytes at `src` into the range at `offset`.
  remote_stage_outcome write(const remote_device_range& r, uint64_t offset, int device,
                             staging::device_ptr src, uint64_t length);

private:
  remote_stage_outcome run(remote_stage_request req);
  node* node_;
};

} // namespace ferry
