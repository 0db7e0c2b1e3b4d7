// blocking_client: the handle API for plain (non-actor) code, on top of a
// node. Each call sends one request to the node's actors and waits for the
// answer, bounded: a control call by request_timeout, a get or a staging
// copy by transfer_timeout (plus one request_timeout for its answer). The
// actors bound every cross-node step inside it too.
// Must never: be used from inside an actor (it blocks its thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>

#include "actors/cluster/gateway_interface.hpp"
#include "actors/rdma/rdma_types.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/rv_messages.hpp"
#include "runtime/region_guard.hpp"

namespace ferry {

class node;

struct get_result {
  byte_buffer bytes;
  uint64_t lease_id = 0;
};

struct pinned_result {
  pinned_ptr block; // registered memory; holds its pool space while alive
  uint64_t size = 0;
  uint64_t lease_id = 0;
};

class blocking_client {
public:
  explicit blocking_client(node& n);

  /// Stages bytes on this node; a non-zero ttl frees the slot after it.
  caf::expected<data_handle>
  register_data(byte_buffer bytes,
                std::chrono::milliseconds ttl = std::chrono::milliseconds{0});

  /// Stages bytes in registered memory (the RDMA path) when the node can,
  /// else in plain memory with the reason counted. Never fails for lack of
  /// registered memory.
  caf::expected<data_handle>
  register_data_pinned(byte_buffer bytes,
                       std::chrono::milliseconds ttl = std::chrono::milliseconds{0});

  /// Registers caller-owned memory [ptr, ptr + len) for zero-copy staging
  /// (register_data_in_region). Unsafe by contract: until the guard reports
  /// the region deregistered, the memory must stay valid for reads and
  /// writes, in place, and unfreed, and nothing may rely on its contents
  /// staying unchanged (a peer holding the key can write it).
  /// Errors: errc::invalid_argument (no UCX on this node, a null or
  /// wrapping range, a registration UCX refused), errc::budget_exhausted.
  caf::expected<region_guard> register_external_memory(void* ptr, size_t len);

  /// The safe form: the node holds `buffer` until the unmap is confirmed
  /// (region_guard::unregister_owned hands it back). On an error `buffer`
  /// is left with the caller untouched.
  caf::expected<region_guard> register_owned(byte_buffer& buffer);

  /// Stages [offset, offset + len) of a registered region with no copy;
  /// the range is relative to the registered pointer. Errors:
  /// errc::invalid_argument (outside the region), errc::draining (being
  /// unregistered). Never copies instead.
  caf::expected<data_handle>
  register_data_in_region(const region_guard& region, uint64_t offset,
                          uint64_t len,
                          std::chrono::milliseconds ttl = std::chrono::milliseconds{0});

  /// Pulls the payload and holds a lease: end it with detach or release.
  caf::expected<get_result> get(const data_handle& h);

  /// Hands back a get's result (or any buffer) once done with it: a large
  /// one is kept warm and a later get's result lands in it, with no zero
  /// fill and no fresh pages (node_context::give_back). Asks nothing of the
  /// node's actors (a lock, and perhaps freeing an older buffer); after
  /// the node's stop the buffer is freed.
  void give_back(byte_buffer&& bytes);

  /// Pulls into [dest, dest + size); answers the bytes written and the lease.
  caf::expected<std::pair<uint64_t, uint64_t>>
  get_into(const data_handle& h, char* dest, size_t size);

  /// Like get, but the bytes stay in a registered pool block (no copy out
  /// on the RDMA path); the same type on both paths.
  caf::expected<pinned_result> get_pinned(const data_handle& h);

  /// A registered block of at least `bytes`: a destination for a zero-copy
  /// get_into (a pinned writer).
  caf::expected<pinned_ptr> alloc_pinned_writer(uint64_t bytes);

  /// GETs straight into `writer` on the RDMA path; answers the bytes written
  /// and the lease.
  caf::expected<std::pair<uint64_t, uint64_t>> get_into(const data_handle& h,
                                                        const pinned_ptr& writer);

  caf::expected<rv_metadata_response> metadata(const data_handle& h);
  caf::expected<uint64_t> ref(const data_handle& h);
  caf::error detach(const data_handle& h, uint64_t lease_id);
  caf::expected<rv_release_response> release(const data_handle& h,
                                             uint64_t lease_id);

  /// Asks a remote node to pull `h` and stage its own copy.
  caf::expected<data_handle> adopt(const gateway_actor& remote,
                                   const data_handle& h, bool pinned = false);

  /// Has the node behind `gw` spawn a worker of a type in its registry
  /// (worker_registry), with `args`; the worker's handle.
  caf::expected<caf::actor> spawn(const gateway_actor& gw, const std::string& type,
                                  caf::message args = {});

  /// A node's self-description (JSON).
  caf::expected<std::string> stat(const gateway_actor& gw);

private:
  caf::expected<region_guard> register_region(external_region_ptr region);

  /// One request to `dest` from a scoped actor, waiting at most `timeout`:
  /// `on_value`'s result for the answer, or the error (errc::timeout names
  /// what did not answer).
  template <class Result, class Dest, class OnValue, class... Ts>
  caf::expected<Result> ask(std::chrono::milliseconds timeout, const Dest& dest,
                            OnValue on_value, Ts&&... xs);

  std::chrono::milliseconds control_bound() const;
  std::chrono::milliseconds transfer_bound() const;

  node* node_;
};

} // namespace ferry
