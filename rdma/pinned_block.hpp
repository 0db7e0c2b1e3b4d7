// pinned_block: a piece of registered (RDMA-readable) memory lent out by the
// arena pool: where it is (local pointer and the address peers GET from),
// its packed remote key, and the free token that returns it to the pool.
// The token is private to the block: a descriptor built from the block lets
// a peer read the range, never free it, and does not keep it alive.
// Must never: be copied (one block, one free), or outlive its arena pool
// without the pool's consent (the release callback is how the pool knows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ferry {

class pinned_block {
public:
  pinned_block(char* data, size_t size, uint64_t address,
               std::shared_ptr<const std::vector<uint8_t>> rkey,
               uint64_t generation, std::function<void()> release)
    : data_(data),
      size_(size),
      address_(address),
      rkey_(std::move(rkey)),
      generation_(generation),
      release_(std::move(release)) {
    // nop
  }

  ~pinned_block() {
    if (release_)
      release_();
  }

  pinned_block(const pinned_block&) = delete;
  pinned_block& operator=(const pinned_block&) = delete;

  char* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  /// The address a peer names in its GET (the owner's virtual address).
  uint64_t address() const noexcept { return address_; }
  const std::vector<uint8_t>& rkey() const noexcept { return *rkey_; }
  /// The registration's generation (diagnostics in the descriptor).
  uint64_t generation() const noexcept { return generation_; }

private:
  char* data_;
  size_t size_;
  uint64_t address_;
  std::shared_ptr<const std::vector<uint8_t>> rkey_;
  uint64_t generation_;
  std::function<void()> release_;
};

using pinned_ptr = std::shared_ptr<pinned_block>;

} // namespace ferry
