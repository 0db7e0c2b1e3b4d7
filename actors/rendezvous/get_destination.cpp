#include "actors/rendezvous/get_destination.hpp"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "protocol/errors.hpp"

namespace ferry {

uint64_t physical_memory_bytes() {
  static const uint64_t bytes = [] { // read once: glibc asks the kernel each time
    long pages = ::sysconf(_SC_PHYS_PAGES);
    long page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                 : uint64_t{0};
  }();
  return bytes;
}

caf::error room_for(byte_buffer& buf, uint64_t bytes, uint64_t memory) {
  if (memory > 0 && bytes > memory)
    return make_error(errc::payload_too_large,
                      "a payload of " + std::to_string(bytes)
                        + " bytes is larger than this machine's memory ("
                        + std::to_string(memory) + " bytes)");
  try {
    if (buf.capacity() < bytes)
      reserve_for_bulk(buf, bytes);
    return {};
  } catch (const std::exception&) { // bad_alloc, length_error
    return make_error(errc::payload_too_large,
                      "cannot allocate " + std::to_string(bytes) + " bytes");
  }
}

get_destination get_destination::caller_memory(mutable_bytes dest) {
  get_destination d{transfer::into::raw};
  d.caller_ = dest;
  return d;
}

get_destination get_destination::caller_writer(pinned_ptr writer) {
  get_destination d{transfer::into::pinned_writer};
  d.block_ = std::move(writer);
  return d;
}

uint64_t get_destination::caller_room() const {
  switch (kind_) {
    case transfer::into::raw: return caller_.size;
    case transfer::into::pinned_writer: return block_ ? block_->size() : 0;
    default: return 0;
  }
}

caf::error get_destination::reserve(uint64_t bytes, warm_buffers* warm) {
  // Room only: in-order chunks are appended (place_at), not zeroed.
  buffer_ = warm ? warm->take(bytes) : byte_buffer{};
  return room_for(buffer_, bytes);
}

void get_destination::write(uint64_t offset, const char* data, size_t n) {
  switch (kind_) {
    case transfer::into::buffer: return place_at(buffer_, offset, data, n);
    case transfer::into::raw: std::memcpy(caller_.data + offset, data, n); return;
    default: std::memcpy(block_->data() + offset, data, n);
  }
}

caf::error get_destination::start_direct(uint64_t bytes, warm_buffers* warm) {
  auto room = warm ? warm->take_unfilled(bytes) : byte_buffer{};
  if (auto err = room_for(room, bytes))
    return err;
  direct_ = std::make_shared<byte_buffer>(std::move(room));
  growing_ = bytes;
  return {};
}

bool get_destination::grow_step(warm_buffers* warm) {
  auto& room = *direct_;
  // Safe to swap: nothing points into the room before it is grown (the
  // block over it is made below, and the GET is posted after that).
  if (warm && room.size() + copy_slice_bytes < growing_)
    if (auto ready = warm->take_unfilled(growing_); ready.capacity() >= growing_) {
      assert(!block_);
      room.swap(ready); // it grows on from its own length (no fill up to it)
    }
  // Within its capacity (room_for): no reallocation, only this slice's fill.
  room.resize(std::min<uint64_t>(growing_, room.size() + copy_slice_bytes));
  if (room.size() < growing_)
    return false;
  growing_ = 0;
  // A block over the buffer's bytes (no registration: the transports of a
  // direct GET need none) that keeps it alive while anyone holds the block.
  auto keep = direct_;
  block_ = std::make_shared<pinned_block>(room.data(), room.size(), 0,
                                          std::make_shared<const std::vector<uint8_t>>(),
                                          0, [keep] {});
  return true;
}

get_destination::copy_out get_destination::finish_get(uint64_t len, warm_buffers* warm) {
  if (direct_) { // the bytes landed in the result
    block_.reset();
    buffer_ = std::move(*direct_);
    buffer_.resize(len); // never longer than the GET: a cut, no fill
    direct_.reset();
    return copy_out::none;
  }
  if (kind_ != transfer::into::buffer && kind_ != transfer::into::raw)
    return copy_out::none; // the block is the result, or the caller's writer
  char* into = kind_ == transfer::into::raw ? caller_.data : nullptr;
  auto out = into ? nullptr : std::make_shared<byte_buffer>(warm ? warm->take(len) : byte_buffer{});
  job_ = copy_job{into, block_->data(), len, block_, out};
  // A caller's memory is written here only, whatever the size: a get that
  // fails stops its slices with it, where a copier could go on writing
  // after the caller was told and let go of its buffer.
  if (len >= bulk_copy_min && (into || len <= sliced_copy_max)) {
    copying_.emplace(job_);
    return copy_out::slices;
  }
  return copy_out::copier;
}

bool get_destination::copy_step() {
  return copying_->step();
}

pinned_ptr get_destination::copied() {
  if (job_.out)
    buffer_ = std::move(*job_.out);
  copying_.reset();
  job_ = {};
  return std::exchange(block_, nullptr);
}

void get_destination::get_failed() {
  if (kind_ != transfer::into::pinned_writer)
    block_.reset();
  direct_.reset();
  growing_ = 0;
}

} // namespace ferry
