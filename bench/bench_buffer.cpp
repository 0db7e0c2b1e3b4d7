#include "bench/bench_buffer.hpp"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

namespace ferry::bench {

namespace {

constexpr size_t huge_page = 2 * 1024 * 1024;

} // namespace

bench_buffer::bench_buffer(size_t size) : size_(size) {
  if (size == 0)
    return;
  mapped_ = (size + huge_page - 1) / huge_page * huge_page;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    mapped_ = 0;
    size_ = 0;
    throw std::bad_alloc{};
  }
  // Advice only: without THP the region still works, just faults slower.
  (void) ::madvise(p, mapped_, MADV_HUGEPAGE);
  data_ = static_cast<char*>(p);
  std::memset(data_, 0, mapped_);
}

bench_buffer::~bench_buffer() {
  release();
}

bench_buffer::bench_buffer(bench_buffer&& other) noexcept
  : data_(std::exchange(other.data_, nullptr)),
    size_(std::exchange(other.size_, 0)),
    mapped_(std::exchange(other.mapped_, 0)) {
}

bench_buffer& bench_buffer::operator=(bench_buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void bench_buffer::release() noexcept {
  if (data_ != nullptr)
    ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = 0;
}

} // namespace ferry::bench
