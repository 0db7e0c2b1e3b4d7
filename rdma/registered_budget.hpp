// registered_budget: the cap on registered bytes, arenas and external
// regions together, counted in whole pages (what the kernel pins).
// Must never: go negative, or let a reservation through past the cap.
#pragma once

#include <cstdint>

namespace ferry {

constexpr uint64_t page_bytes = 4096;

inline uint64_t round_to_pages(uint64_t bytes) {
  return (bytes + page_bytes - 1) / page_bytes * page_bytes;
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
