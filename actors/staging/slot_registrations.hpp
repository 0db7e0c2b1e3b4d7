// slot_registrations: what a remote staging session needs to move a chunk
// between the two nodes' slots with one UCX GET (stage_cross_mode::ucx_get).
//   slot_registrations  the session's private UCX registrations of its own
//                       slots (a READ's source slots, a WRITE's requester
//                       slots), made through the node's arena pool (charged
//                       to its registered-bytes budget) and retired, with a
//                       bound, before the chunks go back to the stager
//   slot_landing        one local slot a GET writes into: counts the GETs
//                       whose destination the UCX engine still holds (an
//                       abandoned GET may write on), so the session keeps
//                       such a chunk retained instead of reusing it
//   get_into_slot       one GET of a peer's slot into a local slot, bounded
// Calls block (a scoped actor): only from a detached actor or a shard's
// thread, never from a cooperative actor.
// Must never: give a chunk back while it is registered or a GET may still
// write it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
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

class slot_registrations {
public:
  slot_registrations() = default;

  /// Registers every slot (a refused one retires those made before it),
  /// and keeps the node's engine progressing for peers' GETs (an emulated
  /// GET over tcp needs this side to progress) until retired.
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
};

class slot_landing {
public:
  slot_landing() : held_(std::make_shared<std::atomic<int64_t>>(0)) {}

  /// A destination block over [data, data + size) for one GET: counted
  /// held until the engine lets it go.
  pinned_ptr lend(char* data, uint64_t size) const;

  /// Waits up to `bound` until no GET holds the slot; false if one still does.
  bool quiet(std::chrono::milliseconds bound) const;

private:
  std::shared_ptr<std::atomic<int64_t>> held_;
};

/// GETs `length` bytes of the peer's slot `key` (worker `worker`) into
/// `landing`'s memory at `dest`, within `timeout`. Errors: the engine's
/// (get_failed, get_abandoned: the slot may still be written), timeout.
caf::error get_into_slot(caf::scoped_actor& self, const ucx_engine_ref& engine,
                         uint64_t worker, const stage_slot_key& key, uint64_t length,
                         const slot_landing& landing, char* dest,
                         std::chrono::milliseconds timeout);

} // namespace ferry
