// rdma_reader: what a consumer needs of the RDMA path, behind one seam: a
// registered destination block, one GET of a peer's memory into it, and
// where a destination goes once its bytes were copied out. The node's
// reader (make_node_rdma_reader) asks the arena pool actor and the UCX
// engine; tests use fake_rdma_reader (tests/support), which reads memory of
// this process, so the consumer's RDMA decision and its fallbacks run on
// CAF's test coordinator without UCX.
//
// Calls come from the consumer's own actor (`self`), and their answers
// arrive as that actor's messages (request-then), never inline from
// another thread; a reader may answer inline when it has the answer at hand
// (a warm destination). Readers are shared by every consumer of a node:
// they keep no per-get state.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "actors/rdma/arena_pool_actor.hpp"
#include "actors/rdma/rdma_types.hpp"
#include "actors/rdma/ucx_engine.hpp"
#include "protocol/rdma_descriptor.hpp"

namespace ferry {

class rdma_reader {
public:
  using block_handler = std::function<void(caf::expected<pinned_ptr>)>;
  /// The GET's duration in nanoseconds, or why it failed
  /// (errc::get_abandoned: the destination may still be written).
  using get_handler = std::function<void(caf::expected<uint64_t>)>;

  virtual ~rdma_reader() = default;

  /// A registered block of at least `bytes`. `for_get`: a GET's destination,
  /// which a kept (warm) block may serve; else a block handed to a caller.
  virtual void allocate(caf::event_based_actor* self, uint64_t bytes, bool for_get,
                        std::chrono::milliseconds timeout, block_handler done)
    = 0;

  /// GETs `desc.len` bytes of worker `worker_id`'s memory into `dest`.
  virtual void get(caf::event_based_actor* self, uint64_t worker_id,
                   const rdma_descriptor& desc, pinned_ptr dest,
                   std::chrono::milliseconds timeout, get_handler done)
    = 0;

  /// The pool that lends callers their registered blocks (writers).
  virtual const arena_pool_actor& pool() const = 0;

  /// A GET destination whose bytes were copied out: kept for the next GET,
  /// or freed.
  virtual void recycle(pinned_ptr block) = 0;
};

/// The node's reader: destinations from the arena pool (or the engine's
/// warm block), GETs on the UCX engine.
std::shared_ptr<rdma_reader> make_node_rdma_reader(arena_pool_actor pool,
                                                   ucx_engine_ref engine);

} // namespace ferry
