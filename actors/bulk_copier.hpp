// bulk_copier: a small, fixed set of detached actors (own threads) that
// copy whole payloads, so no cooperative actor's handler runs a copy whose
// length a caller or a peer chose: staging bytes into registered memory,
// copying a finished GET out of its destination. A copy below
// bulk_copy_min runs inline instead (it costs less than the hop).
// A job keeps what it reads and writes alive until it is done, so a caller
// that stopped waiting frees nothing under a copy.
// Must never: run more copies at once than it has workers.
#pragma once

#include <cstddef>
#include <memory>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>

#include "protocol/atoms.hpp"
#include "protocol/byte_buffer.hpp"

namespace ferry {

/// Copies below this many bytes run inline in the actor that needs them.
constexpr size_t bulk_copy_min = 1024 * 1024;

/// One copy: `len` bytes from `src` to `dst`, or, with a null `dst`, into
/// `*out` (a fresh buffer the requester shares with the job: handing a
/// whole payload back in a reply would make CAF copy it once more).
/// `keep` holds the memory of both ends.
struct copy_job {
  char* dst = nullptr;
  const char* src = nullptr;
  size_t len = 0;
  std::shared_ptr<const void> keep;
  std::shared_ptr<byte_buffer> out;
};

using copy_atom = caf::atom_constant<caf::atom("bulk_copy")>;

/// Spawns `workers` (at least 1) detached copiers behind one round-robin
/// pool. Messages: (copy_atom, copy_job) -> caf::ok_atom once copied.
caf::actor spawn_bulk_copier(caf::actor_system& sys, size_t workers);

} // namespace ferry

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::copy_job)
