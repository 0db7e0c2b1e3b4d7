#include "staging/source_ring.hpp"

#include <string>

#include "protocol/errors.hpp"

namespace ferry::staging {

namespace {

caf::error out_of_order(const char* call, uint32_t chunk, const char* why) {
  return make_error(errc::protocol_violation, std::string{call} + " of chunk "
                                                + std::to_string(chunk) + ": " + why);
}

} // namespace

source_ring::source_ring(scope s)
  : scope_(s), chunks_(chunks_of(s.length, s.chunk)),
    slots_(s.width == 0 ? 1 : s.width) {
  if (scope_.width == 0)
    scope_.width = 1;
}

caf::error source_ring::check_scope(const stage_frame& f, stage_phase phase) const {
  if (f.nonce != scope_.nonce || f.registration != scope_.registration)
    return make_error(errc::protocol_violation,
                      "the frame names another session (nonce or registration)");
  if (f.phase != static_cast<uint8_t>(phase))
    return make_error(errc::protocol_violation, "the frame's phase is not this call's");
  if (phase == stage_phase::unpin) {
    if (f.chunk != 0 || f.offset != 0 || f.length != scope_.length)
      return make_error(errc::protocol_violation, "Unpin names another range");
    return {};
  }
  if (f.chunk >= chunks_)
    return make_error(errc::protocol_violation,
                      "chunk " + std::to_string(f.chunk) + " of " + std::to_string(chunks_));
  auto s = span(f.chunk);
  if (f.offset != s.offset || f.length != s.length)
    return make_error(errc::protocol_violation,
                      "chunk " + std::to_string(f.chunk) + " names another range");
  return {};
}

caf::expected<uint32_t> source_ring::delegate(const stage_frame& f) {
  if (auto err = check_scope(f, stage_phase::delegate))
    return err;
  auto& s = slot_of(f.chunk);
  if (scope_.direction == stage_direction::read) {
    if (f.chunk != next_delegate_)
      return out_of_order("Delegate", f.chunk, "not the next chunk to copy in");
    if (s.state != slot_state::free)
      return out_of_order("Delegate", f.chunk, "its slot still holds another chunk");
    ++next_delegate_;
  } else if (s.state != slot_state::filled || s.chunk != f.chunk) {
    return out_of_order("Delegate", f.chunk, "its bytes did not cross yet");
  }
  s.state = slot_state::copying;
  s.chunk = f.chunk;
  return f.chunk % scope_.width;
}

caf::expected<uint32_t> source_ring::query(const stage_frame& f) {
  if (auto err = check_scope(f, stage_phase::delegate))
    return err;
  auto& s = slot_of(f.chunk);
  if (s.state != slot_state::copying || s.chunk != f.chunk)
    return out_of_order("QueryDelegate", f.chunk, "no Delegate of it is in flight");
  return f.chunk % scope_.width;
}

void source_ring::copy_done(uint32_t index) {
  auto& s = slots_[index];
  s.state = scope_.direction == stage_direction::read ? slot_state::filled : slot_state::free;
}

caf::expected<uint32_t> source_ring::cross(const stage_frame& f, uint64_t piece_offset,
                                           uint64_t piece_length) {
  if (auto err = check_scope(f, stage_phase::cross))
    return err;
  if (piece_length == 0 || piece_offset > f.length || piece_length > f.length - piece_offset)
    return out_of_order("CROSS", f.chunk, "the piece is outside the chunk");
  auto& s = slot_of(f.chunk);
  if (scope_.direction == stage_direction::read) {
    if (s.state != slot_state::filled || s.chunk != f.chunk)
      return out_of_order("CROSS", f.chunk, "its Delegate was not confirmed");
  } else if (s.state == slot_state::free) {
    if (f.chunk != next_cross_ || piece_offset != 0)
      return out_of_order("CROSS", f.chunk, "not the next chunk to cross");
    ++next_cross_;
    s.state = slot_state::receiving;
    s.chunk = f.chunk;
    s.received = 0;
  } else if (s.state != slot_state::receiving || s.chunk != f.chunk
             || s.received != piece_offset) {
    return out_of_order("CROSS", f.chunk, "its slot is busy or the piece is out of order");
  }
  return f.chunk % scope_.width;
}

void source_ring::received(uint32_t index, uint64_t bytes) {
  slots_[index].received += bytes;
}

caf::expected<uint32_t> source_ring::cross_by_get(const stage_frame& f) {
  if (auto err = check_scope(f, stage_phase::cross))
    return err;
  if (scope_.direction != stage_direction::write)
    return out_of_order("CROSS", f.chunk, "a READ's chunk is not fetched by the source");
  auto& s = slot_of(f.chunk);
  if (s.state != slot_state::free || f.chunk != next_cross_)
    return out_of_order("CROSS", f.chunk, "its slot is busy or it is not the next to cross");
  ++next_cross_;
  s.state = slot_state::landing;
  s.chunk = f.chunk;
  s.received = 0;
  return f.chunk % scope_.width;
}

void source_ring::landed(uint32_t index) {
  auto& s = slots_[index];
  if (s.state != slot_state::landing)
    return;
  s.state = slot_state::receiving;
  s.received = span(s.chunk).length;
}

caf::expected<uint32_t> source_ring::finish_cross(const stage_frame& f) {
  if (auto err = check_scope(f, stage_phase::cross))
    return err;
  auto& s = slot_of(f.chunk);
  if (scope_.direction == stage_direction::read) {
    if (s.state != slot_state::filled || s.chunk != f.chunk)
      return out_of_order("FinishCross", f.chunk, "the chunk is not in its slot");
    s.state = slot_state::free;
  } else {
    if (s.state != slot_state::receiving || s.chunk != f.chunk || s.received != f.length)
      return out_of_order("FinishCross", f.chunk, "not all of its bytes crossed");
    s.state = slot_state::filled;
  }
  return f.chunk % scope_.width;
}

caf::error source_ring::unpin(const stage_frame& f) const {
  return check_scope(f, stage_phase::unpin);
}

std::vector<uint32_t> source_ring::copying() const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].state == slot_state::copying)
      out.push_back(i);
  return out;
}

} // namespace ferry::staging
