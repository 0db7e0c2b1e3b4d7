// source_ring: the rules of one source session, plain (the session actor is
// a shell around it): the scope every frame must carry, and the state of
// each source slot. Chunk i always uses slot i % width.
//   READ   Delegate(i)      slot free, i the next in order  -> copying
//          QueryDelegate(i) slot copying chunk i (pending or complete;
//                           complete -> filled)
//          CROSS(i, piece)  slot filled with chunk i
//          FinishCross(i)   slot filled with chunk i        -> free
//   WRITE  CROSS(i, piece)  slot free and i the next in order, or
//                           receiving chunk i at that piece -> receiving
//          CROSS(i) by GET  slot free and i the next in order -> landing;
//                           the GET done -> receiving, all of it
//                           (nothing else touches a landing slot)
//          FinishCross(i)   slot received all of chunk i    -> filled
//          Delegate(i)      slot filled with chunk i        -> copying
//          QueryDelegate(i) slot copying chunk i (complete -> free)
//   Unpin                   the whole range, phase unpin
// A frame whose nonce, registration, phase, chunk or range differs from the
// session's, or that comes early, twice or out of order, is an error reply
// and changes nothing: the session never starts a copy for it.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/expected.hpp>

#include "protocol/remote_staging_wire.hpp"
#include "staging/remote_geometry.hpp"

namespace ferry::staging {

class source_ring {
public:
  struct scope {
    uint64_t nonce = 0;
    uint64_t registration = 0;
    stage_direction direction = stage_direction::read;
    uint64_t length = 0; // the session's range
    uint64_t chunk = 0;  // negotiated chunk size
    uint32_t width = 1;  // source slots R
  };
  enum class slot_state { free, copying, filled, receiving, landing };
  struct slot {
    slot_state state = slot_state::free;
    uint32_t chunk = 0;
    uint64_t received = 0; // WRITE: bytes of the chunk crossed so far
  };

  explicit source_ring(scope s);

  const scope& session() const { return scope_; }
  uint32_t chunks() const { return chunks_; }
  const slot& at(uint32_t index) const { return slots_[index]; }
  /// The chunk's span in the session's range.
  chunk_span span(uint32_t chunk) const { return span_of(scope_.length, scope_.chunk, chunk); }

  /// Each returns the slot to act on, or the error to answer.
  caf::expected<uint32_t> delegate(const stage_frame& f);
  caf::expected<uint32_t> query(const stage_frame& f);
  caf::expected<uint32_t> cross(const stage_frame& f, uint64_t piece_offset,
                                uint64_t piece_length);
  /// WRITE over UCX: the whole chunk lands by one GET of the peer's slot.
  caf::expected<uint32_t> cross_by_get(const stage_frame& f);
  caf::expected<uint32_t> finish_cross(const stage_frame& f);
  caf::error unpin(const stage_frame& f) const;

  /// The slot's copy completed (QueryDelegate found its event done).
  void copy_done(uint32_t index);
  /// WRITE: a piece landed in the slot.
  void received(uint32_t index, uint64_t bytes);
  /// WRITE over UCX: the slot's GET ended well; the chunk is all there.
  void landed(uint32_t index);
  /// Slots whose copy may still run (to drain before the chunks go back).
  std::vector<uint32_t> copying() const;

private:
  caf::error check_scope(const stage_frame& f, stage_phase phase) const;
  slot& slot_of(uint32_t chunk) { return slots_[chunk % scope_.width]; }

  scope scope_;
  uint32_t chunks_;
  std::vector<slot> slots_;
  uint32_t next_delegate_ = 0; // READ: the next chunk to copy in
  uint32_t next_cross_ = 0;    // WRITE: the next chunk to cross
};

} // namespace ferry::staging
