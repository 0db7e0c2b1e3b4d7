// registered_budget: the cap on registered bytes, arenas and external
// regions together, counted in whole pages (what the kernel pins).
// Must never: go negative, or let a reservation through past the cap.
#pragma once

#include <cstdint>

namespace ferry {

constexpr uint64_t page_bytes = 4096;

/// Whole pages covering `bytes`; saturates at the largest page multiple
/// instead of wrapping to 0 near 2^64 (a size from a peer can be anything).
inline uint64_t round_to_pages(uint64_t bytes) {
  constexpr uint64_t top = ~uint64_t{0} / page_bytes * page_bytes;
  if (bytes > top)
    return top;
  return bytes / page_bytes * page_bytes + (bytes % page_bytes != 0 ? page_bytes : 0);
}

class registered_budget {
public:
  explicit registered_budget(uint64_t cap) : cap_(cap) {}

  /// Reserves round_to_pages(bytes); false (and nothing reserved) over the cap.
  bool try_reserve(uint64_t bytes) {
    auto b = round_to_pages(bytes);
    if (b > cap_ || used_ > cap_ - b)
      return false;
    used_ += b;
    return true;
  }

  /// Returns what try_reserve(bytes) took.
  void release(uint64_t bytes) {
    auto b = round_to_pages(bytes);
    used_ = b > used_ ? 0 : used_ - b;
  }

  /// Replaces a reservation of `reserved` by what the backend really pinned.
  void reconcile(uint64_t reserved, uint64_t pinned) {
    release(reserved);
    used_ += round_to_pages(pinned);
  }

  uint64_t used() const { return used_; }
  uint64_t cap() const { return cap_; }

private:
  uint64_t cap_;
  uint64_t used_ = 0;
};

} // namespace ferry
