// transfer_batch: one ordered submission that mixes the node's three ways
// of moving bytes into or out of this node's memory (the spec's "one
// ordered batch can mix GPU Direct RDMA, remote staging and host
// transfers", in ferry's terms):
//   read / write      remote staging with a peer's exposed device range
//                     (remote_staging.hpp)
//   get_into_device   a handle's payload into device memory, over the
//                     chunked or RDMA path and the pinned pool (ferry has no
//                     GPUDirect: this is its device get, gpu_payloads.hpp)
//   get_into          a handle's payload into host memory (blocking_client)
// run() first prepares the whole submission: every item is checked (a
// non-zero length, a remote span inside its range, this node's CUDA backend
// and a local range that is device memory of its length for every device
// item, a host buffer; for a get, its payload's size asked of its owner,
// which must know the handle and fit it in the capacity) and an item that
// fails these checks fails the batch with nothing run. What only running
// finds (the source refuses the Pin, a device index, a range another
// session holds) fails that item in its turn. Then the items run in
// order, each once the one before it ended well; the first failure ends
// the batch and the items after it are reported not run. Each item is
// bounded as the same call alone is, so the batch's bound is their sum. A
// done get's lease is the caller's, as after the same get alone, also when
// a later item failed: detach_leases() ends them all. A WRITE that may
// have run is reported remote_effect::unknown and is never retried.
// Must never: be used from inside an actor (it blocks its thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "actors/staging/remote_stager.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/remote_staging_wire.hpp"
#include "staging/cuda_api.hpp"

namespace ferry {

class node;

enum class batch_item_kind : uint8_t {
  remote_read,     // a peer's device range -> local device memory
  remote_write,    // local device memory -> a peer's device range
  get_into_device, // a handle's payload -> local device memory
  get_into_host    // a handle's payload -> local host memory
};

/// One item; the builder methods of transfer_batch fill it.
struct batch_item {
  batch_item_kind kind = batch_item_kind::get_into_host;
  remote_device_range range;  // remote_*
  uint64_t offset = 0;        // remote_*: into the range
  data_handle handle;         // get_*
  int device = 0;             // remote_*, get_into_device
  staging::device_ptr local_device = 0;
  char* local_host = nullptr; // get_into_host
  uint64_t length = 0;        // remote_*: the bytes; get_*: the capacity
};

enum class batch_item_state : uint8_t { not_run, done, failed };

struct batch_item_outcome {
  batch_item_state state = batch_item_state::not_run;
  uint64_t bytes = 0;    // the bytes moved (0 unless done)
  uint64_t lease_id = 0; // a done get's lease (the caller ends it)
  caf::error error;      // failed: why
  remote_effect effect = remote_effect::none; // a failed WRITE's
};

struct batch_outcome {
  caf::error error; // none: every item is done; else the failed item's
  // The item that failed, or that failed the preparation; npos when none.
  size_t failed_at = npos;
  std::vector<batch_item_outcome> items; // one per item, in order
  static constexpr size_t npos = std::numeric_limits<size_t>::max();
};

class transfer_batch {
public:
  explicit transfer_batch(node& n) : node_(&n) {}

  /// Remote staging READ: the range's bytes [offset, offset + length) into `dst`.
  transfer_batch& read(const remote_device_range& r, uint64_t offset, int device,
                       staging::device_ptr dst, uint64_t length);
  /// Remote staging WRITE: `length` bytes at `src` into the range at `offset`.
  transfer_batch& write(const remote_device_range& r, uint64_t offset, int device,
                        staging::device_ptr src, uint64_t length);
  /// The payload of `h` into device memory [dst, dst + capacity).
  transfer_batch& get_into_device(const data_handle& h, int device, staging::device_ptr dst,
                                  uint64_t capacity);
  /// The payload of `h` into host memory [dst, dst + capacity).
  transfer_batch& get_into(const data_handle& h, char* dst, uint64_t capacity);

  const std::vector<batch_item>& items() const { return items_; }

  /// Prepares the whole submission, then runs it in order (above).
  batch_outcome run();

  /// Detaches every lease `out` (this batch's outcome) still names and
  /// zeroes its id; the first error, after trying them all.
  caf::error detach_leases(batch_outcome& out);

private:
  node* node_;
  std::vector<batch_item> items_;
};

/// The preparation's check of one item: its error, or none. `api` is this
/// node's CUDA backend (null without a staging layer); `cuda_missing` why
/// it cannot serve (empty when it can).
caf::error check_batch_item(const batch_item& item, staging::cuda_api* api,
                            const std::string& cuda_missing);

} // namespace ferry
