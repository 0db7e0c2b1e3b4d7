// slot_registrations: what a remote staging session needs to move a chunk
// between the two nodes' slots with one UCX GET (stage_cross_mode::ucx_get).
//   slot_registrations  the session's private UCX registrations of its own
//                       slots (a READ's source slots, a WRITE's requester
//                       slots), made through the node's arena pool (charged
//                       to its registered-bytes budget) and retired, with a
//                       bound, before the chunks go back to the stager
//   slot_landing        one local slot a GET writes into: counts the GETs
//                       whose destination the UCX engine still holds (an
//                       abandoned GET may write on), so the session gives
//                       such a chunk back only once the engine let it go
//                       (when_quiet), never while a GET may still write
//   request_slot_get    one GET of a peer's slot into a local slot, bounded;
//                       its answer comes later (several may be in flight)
// make and retire block (a scoped actor): only from a detached actor or a
// shard's thread, never from a cooperative actor.
// Must never: give a chunk back while it is registered or a GET may still
// write it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "actors/staging/ucx_cross_means.hpp"
#include "protocol/remote_staging_wire.hpp"

namespace ferry {

struct slot_memory {
  char* data = nullptr;
  uint64_t size = 0;
};

/// Move-only: one owner retires them. Destroyed unretired (an exception
/// unwound its session), they retire then, within the bound they were made
/// with.
class slot_registrations {
public:
  slot_registrations() = default;
  slot_registrations(const slot_registrations&) = delete;
  slot_registrations& operator=(const slot_registrations&) = delete;
  slot_registrations(slot_registrations&& other) noexcept;
  slot_registrations& operator=(slot_registrations&& other) noexcept;
  ~slot_registrations();

  /// Registers every slot, all within `timeout`, and keeps the node's
  /// engine progressing for peers' GETs (an emulated GET over tcp needs
  /// this side to progress) until retired. A refused or late one retires
  /// those made before it; a late one is unregistered too (the pool may
  /// still map it after the wait gave up).
  static caf::expected<slot_registrations> make(caf::actor_system& sys,
                                                const ucx_cross_means& means,
                                                const std::vector<slot_memory>& slots,
                                                std::chrono::milliseconds timeout);

  bool empty() const { return regions_.empty(); }
  size_t size() const { return regions_.size(); }
  stage_slot_key key(size_t index) const;
  std::vector<stage_slot_key> keys() const;

  /// Unregisters every slot and waits, within `bound` in all, until each
  /// is unmapped; index i is false when slot i's unmap did not confirm (its
  /// chunk must then stay retained). Once only; later calls return all true.
  std::vector<bool> retire(std::chrono::milliseconds bound);

private:
  ucx_cross_means means_;
  std::vector<external_region_ptr> regions_;
  std::chrono::milliseconds bound_{0}; // the destructor's retire bound
};

class slot_landing {
public:
  slot_landing() : shared_(std::make_shared<counts>()) {}

  /// A destination block over [data, data + size) for one GET: counted
  /// held until the engine lets it go.
  pinned_ptr lend(char* data, uint64_t size) const;

  /// Waits up to `bound` until no GET holds the slot; false if one still does.
  bool quiet(std::chrono::milliseconds bound) const;

  /// Runs `fn` once no GET holds the slot: now when none does, else on the
  /// thread that lets the last one go (the engine's). Once; a later call
  /// replaces a `fn` not yet run.
  void when_quiet(std::function<void()> fn) const;

private:
  struct counts {
    std::mutex mu;
    int64_t held = 0;
    std::function<void()> on_quiet;
  };
  std::shared_ptr<counts> shared_;
};

/// Sends one GET of `length` bytes of the peer's slot `key` (worker
/// `worker`) into `landing`'s memory at `dest`, bounded by `timeout`, from
/// `self` (a scoped actor or an actor pointer); its response handle. The
/// answer: the GET's nanoseconds, or the engine's error (see
/// slot_get_error). The caller checked `key.plausible()`.
template <class Self>
auto request_slot_get(Self& self, const ucx_engine_ref& engine, uint64_t worker,
                      const stage_slot_key& key, uint64_t length, const slot_landing& landing,
                      char* dest, std::chrono::milliseconds timeout) {
  auto handle = self->request(engine.actor(), timeout, ucx_get_atom::value, worker, key.address,
                              length, key.rkey, landing.lend(dest, length));
  engine.wake();
  return handle;
}

/// A slot GET's error as remote staging names it: the engine's (get_failed,
/// get_abandoned: the slot may still be written), and CAF's timeout as
/// get_abandoned too (the engine may still hold the GET).
caf::error slot_get_error(caf::error e);

} // namespace ferry
