// bulk_copier: a small, fixed set of detached actors (own threads) that
// copy whole payloads, so no cooperative actor's handler runs a copy whose
// length a caller or a peer chose: staging bytes into registered memory,
// copying a finished GET out of its destination. A copy below
// bulk_copy_min runs inline instead (it costs less than the hop); an actor
// that can take a message between slices may run a mid-size copy (up to
// sliced_copy_max) itself, copy_slice_bytes at a time (sliced_copy), which
// spares the two thread hand-offs of the copier.
// A job keeps what it reads and writes alive until it is done, so a caller
// that stopped waiting frees nothing under a copy.
// Must never: run more copies at once than it has workers.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>

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
using copy_slice_atom = caf::atom_constant<caf::atom("copy_slice")>;

/// A copy an actor runs itself in slices between its messages.
constexpr size_t copy_slice_bytes = 4ull << 20;
constexpr size_t sliced_copy_max = 64ull << 20;

/// The state of a copy done a slice at a time (a plain structure: the actor
/// sends itself a message between steps).
class sliced_copy {
public:
  explicit sliced_copy(copy_job job) : job_(std::move(job)) {}
  /// Copies the next slice; true once the whole copy is done.
  bool step();
  const copy_job& job() const { return job_; }

private:
  copy_job job_;
  size_t done_ = 0;
};

/// Spawns `workers` (at least 1) detached copiers behind one round-robin
/// pool. Messages: (copy_atom, copy_job) -> caf::ok_atom once copied.
caf::actor spawn_bulk_copier(caf::actor_system& sys, size_t workers);

/// Does the copy `job` describes, on the calling thread.
void run_copy(const copy_job& job);

/// Runs `job` on `copier` (bounded by `timeout`), or inline when the copy
/// is below `inline_below` (bulk_copy_min) or there is no copier; then
/// calls `done()`, or `failed(caf::error&)` when the copier did not answer.
/// Both run in `self`'s context: at once for an inline copy, else on the
/// reply. A caller with many small copies to make in one handler passes 0
/// once its inline budget is spent.
template <class Self, class Done, class Failed>
void copy_then(Self* self, const caf::actor& copier, copy_job job,
               std::chrono::milliseconds timeout, Done done, Failed failed,
               size_t inline_below = bulk_copy_min) {
  if (!copier || job.len < inline_below) {
    run_copy(job);
    return done();
  }
  self->request(copier, timeout, copy_atom::value, std::move(job))
    .then([=](caf::ok_atom) mutable { done(); },
          [=](caf::error& err) mutable { failed(err); });
}

} // namespace ferry

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::copy_job)
