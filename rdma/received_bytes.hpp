// received_bytes: the bytes of one received message, read-only, wherever
// they are: owned here (a vector: copied out of UCX, or received by
// rendezvous) or someone else's memory kept alive by a handle (UCX's own
// buffer of a large eager active message, handed back to UCX when the last
// holder lets go: ucx_active_message.hpp).
// Owns: the vector, or a share of the handle; moving it keeps data() valid.
// Must never: be written through, or outlive what data() points at (the
// handle is what keeps it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace ferry {

class received_bytes {
public:
  received_bytes() = default;
  /// Owned bytes (implicit: a vector is received bytes).
  received_bytes(std::vector<uint8_t> owned) : owned_(std::move(owned)) {}
  /// `size` bytes at `data`, valid while `hold` (or a copy of it) is alive.
  received_bytes(const uint8_t* data, size_t size, std::shared_ptr<const void> hold)
    : held_(data), held_size_(size), hold_(std::move(hold)) {}

  const uint8_t* data() const noexcept { return hold_ ? held_ : owned_.data(); }
  size_t size() const noexcept { return hold_ ? held_size_ : owned_.size(); }
  bool empty() const noexcept { return size() == 0; }
  /// Someone else's memory (not a vector of its own).
  bool held() const noexcept { return hold_ != nullptr; }

  /// The bytes as a vector of their own (a copy when held).
  std::vector<uint8_t> to_vector() && {
    if (!hold_)
      return std::move(owned_);
    return std::vector<uint8_t>(held_, held_ + held_size_);
  }

private:
  std::vector<uint8_t> owned_;
  const uint8_t* held_ = nullptr;
  size_t held_size_ = 0;
  std::shared_ptr<const void> hold_;
};

} // namespace ferry
