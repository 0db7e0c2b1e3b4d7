// get_destination: where one get's bytes go, as a plain structure the
// consumer shell drives (no actor, no messages): a plain get's result
// buffer, a caller's memory, a pool block handed to the caller, a caller's
// registered writer, or a registered block a GET lands in before its copy
// out. It owns the byte-side rules of a get:
// - Room is checked before it is taken: a length an owner states above
//   this machine's memory, or one the allocator refuses, is
//   payload_too_large, never an exception (room_for).
// - Chunks are placed where they belong; a plain get's buffer grows by
//   appending (no zero fill when they come in order).
// - A direct GET's result (the plain get's own buffer as the destination)
//   is grown to its length copy_slice_bytes per step, so no one handler
//   fills a whole payload; a warm buffer is cut, never filled.
// - After a GET: nothing to copy (the result, the caller's writer, or the
//   direct buffer, cut to the GET's length), else a copy out of the
//   registered block: a caller's memory always in slices here (a get that
//   fails stops writing it at once), a fresh buffer in slices up to
//   sliced_copy_max and on the bulk copier above.
// Must never: write past the memory it was given, or take room for a
// length that failed its check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include <caf/error.hpp>

#include "actors/rendezvous/bulk_copier.hpp"
#include "actors/rendezvous/transfer.hpp"
#include "actors/rendezvous/warm_buffers.hpp"
#include "protocol/byte_buffer.hpp"
#include "rdma/pinned_block.hpp"

namespace ferry {

/// The machine's physical memory in bytes (0: unknown).
uint64_t physical_memory_bytes();

/// Gives `buf` room for `bytes` (as it is when it has the room already,
/// else emptied first); an error (payload_too_large) when `bytes` is above `memory`
/// (0: unknown; `buf` is left as it was) or the allocator refuses it.
caf::error room_for(byte_buffer& buf, uint64_t bytes,
                    uint64_t memory = physical_memory_bytes());

class get_destination {
public:
  /// How the bytes of a finished GET reach the caller.
  enum class copy_out {
    none,   // they are where the caller wants them
    slices, // copy_step() until it says done
    copier, // job() on the bulk copier (or inline below bulk_copy_min)
  };

  get_destination() = default;
  explicit get_destination(transfer::into kind) : kind_(kind) {}
  /// get_into: the caller's memory.
  static get_destination caller_memory(mutable_bytes dest);
  /// get_into with a registered writer: the GET lands in it.
  static get_destination caller_writer(pinned_ptr writer);

  transfer::into kind() const { return kind_; }
  /// The caller's room (raw, pinned_writer), for the machine's checks.
  uint64_t caller_room() const;

  /// A plain get's result buffer, with room for `bytes` of chunks (a
  /// warm buffer when one is kept).
  caf::error reserve(uint64_t bytes, warm_buffers* warm);
  /// A chunk's bytes at `offset` (the machine checked that they fit).
  void write(uint64_t offset, const char* data, size_t n);

  /// The registered block a GET or get_pinned's chunks land in.
  void set_block(pinned_ptr block) { block_ = std::move(block); }
  const pinned_ptr& block() const { return block_; }

  /// Starts a direct GET's destination: the result buffer itself, `bytes`
  /// long once grown (grow_step).
  caf::error start_direct(uint64_t bytes, warm_buffers* warm);
  /// Grows the direct result by one slice; true once it has its length,
  /// with block() over its bytes (kept alive by whoever holds the block).
  /// A warm buffer that fits and came since the start (one the node's
  /// prefiller was preparing as this get began) replaces the room grown so
  /// far while more than one slice is left, sparing the rest of the fill;
  /// what was grown is freed.
  bool grow_step(warm_buffers* warm = nullptr);
  bool growing() const { return growing_ > 0; }

  /// The GET of `len` bytes is done: what is left to do. With slices or
  /// copier, the copy is set up (a fresh result buffer from `warm`).
  copy_out finish_get(uint64_t len, warm_buffers* warm);
  /// One slice of the copy out; true once it is done (then copied()).
  bool copy_step();
  bool copying() const { return copying_.has_value(); }
  /// The copy for the bulk copier (after finish_get said copier).
  const copy_job& job() const { return job_; }
  /// The copy out is done: its bytes are the result; the block it read
  /// goes back (returned, for the reader to recycle).
  pinned_ptr copied();

  /// The GET failed: the destination is dropped (the reader keeps what UCX
  /// may still write), but for a caller's writer, which is the caller's.
  void get_failed();

  /// What the caller gets.
  byte_buffer& result() { return buffer_; }
  pinned_ptr& result_block() { return block_; }

private:
  transfer::into kind_ = transfer::into::buffer;
  mutable_bytes caller_; // raw: the caller's memory
  pinned_ptr block_;     // the result block, the caller's writer, or a GET's destination
  byte_buffer buffer_;   // a plain get's result
  // A direct GET's result, shared with block_ (a plain view over it) and,
  // should the GET be abandoned, with the UCX engine until UCX lets go.
  std::shared_ptr<byte_buffer> direct_;
  uint64_t growing_ = 0; // direct_ grows to this
  copy_job job_;
  std::optional<sliced_copy> copying_;
};

} // namespace ferry
