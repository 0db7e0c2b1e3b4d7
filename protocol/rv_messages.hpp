// The bodies of the seven rendezvous control calls (_rv_metadata, _rv_acquire
// and its eager form, _rv_pull, _rv_ref, _rv_detach, _rv_release, _rv_lease_renew) and their
// JSON form.
//
// Version-skew rule: every field added after the first version has a default
// that means what the protocol did before the field existed, and unknown
// fields are ignored. Fields every version sent (handle, lease_id, ...) are
// required. A body that does not parse decodes to errc::malformed_body.
// Must never: throw out of decode, or accept a mistyped field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "protocol/data_handle.hpp"

namespace ferry {

/// What a consumer can read one-sidedly. Absent means "chunks only".
struct rdma_offer {
  std::vector<std::string> backends; // e.g. {"ucx"}
};

struct rv_metadata_request {
  data_handle handle;
};

struct rv_metadata_response {
  uint64_t total_len = 0;
  uint64_t refcount = 0;
  bool pinned = false;
};

struct rv_acquire_request {
  data_handle handle;
  std::optional<rdma_offer> rdma; // default: no offer (old consumer)
  uint64_t lease_ms = 0;          // default 0: the chunked lease has no deadline
  // The largest payload the consumer takes inside the answer (the eager
  // acquire, rv_acquire_eager_atom); default 0: none (the plain acquire).
  uint64_t eager_max = 0;
  // Default false (an old consumer): the owner holds a chunked lease by
  // itself once it served the last chunk. True: the consumer sends a hold
  // once it has the bytes, and until then the lease keeps its deadline.
  bool holds = false;
};

/// Chunked answer: pull chunk_count chunks of chunk_size (the last may be short).
struct rv_ready {
  uint64_t lease_id = 0;
  uint64_t transfer_id = 0;
  uint64_t chunk_size = 0;
  uint64_t chunk_count = 0;
  uint64_t total_len = 0;
  // Default false. True: the payload (at most the asked eager_max, one chunk
  // or none) came with this answer, its lease is held as after its last
  // pull, and nothing is left to pull.
  bool eager = false;
};

/// RDMA answer: one GET described by a binary descriptor.
struct rv_rdma_grant {
  uint64_t lease_id = 0;
  std::vector<uint8_t> descriptor;
  uint64_t lease_timeout_ms = 0; // default 0: no deadline (old owner)
  uint64_t total_len = 0;
};

struct rv_acquire_response {
  std::optional<rv_ready> ready; // exactly one of ready / rdma is set
  std::optional<rv_rdma_grant> rdma;
};

struct rv_pull_request {
  uint64_t transfer_id = 0;
  uint64_t index = 0;
};

struct rv_ref_request {
  data_handle handle;
};

struct rv_ref_response {
  uint64_t refcount = 0;
};

// get_unfinished: the lease's GET was given up, not finished, so the owner's
// UCX worker may still serve it from the block (JSON only when true; an old
// consumer's detach means false).
struct rv_detach_request {
  data_handle handle;
  uint64_t lease_id = 0;
  bool get_unfinished = false;
};

struct rv_release_request {
  data_handle handle;
  uint64_t lease_id = 0;
  bool get_unfinished = false;
};

struct rv_release_response {
  uint64_t refcount = 0;
  bool freed = false;
};

struct rv_lease_renew_request {
  data_handle handle;
  uint64_t lease_id = 0;
  // Default false: renew the lease's deadline. True: the consumer's transfer
  // is done and its caller holds the lease, which keeps no deadline from now
  // on and ends only at detach, release, or its node going away.
  bool held = false;
};

/// The longest duration (ms) a peer can ask for; longer ones are clamped
/// when decoded, so no deadline arithmetic ever overflows.
constexpr uint64_t max_wire_duration_ms = 7ull * 24 * 3600 * 1000;

/// Chunks of `chunk_size` bytes (> 0) that `total_len` bytes take, without
/// the overflow of (total_len + chunk_size - 1) near 2^64.
constexpr uint64_t chunks_for(uint64_t total_len, uint64_t chunk_size) {
  return total_len / chunk_size + (total_len % chunk_size != 0 ? 1 : 0);
}

// -- encoding -----------------------------------------------------------------

std::string encode(const rv_metadata_request& x);
std::string encode(const rv_metadata_response& x);
std::string encode(const rv_acquire_request& x);
std::string encode(const rv_acquire_response& x);
std::string encode(const rv_pull_request& x);
std::string encode(const rv_ref_request& x);
std::string encode(const rv_ref_response& x);
std::string encode(const rv_detach_request& x);
std::string encode(const rv_release_request& x);
std::string encode(const rv_release_response& x);
std::string encode(const rv_lease_renew_request& x);

// -- decoding -----------------------------------------------------------------

/// Decodes a body of type T; errc::malformed_body names what is wrong.
template <class T>
caf::expected<T> decode(std::string_view body);

} // namespace ferry
