// guarded_buffer: test helper that places bytes so that the last one sits
// right before an inaccessible page, so any read past the end faults.
// Must never: be used outside tests (it maps and protects pages).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ferry::test {

class guarded_buffer {
public:
  // Room for up to `max_size` bytes before the guard page.
  explicit guarded_buffer(size_t max_size) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    data_pages_ = (max_size + page_ - 1) / page_ + 1;
    total_ = (data_pages_ + 1) * page_;
    void* p = mmap(nullptr, total_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return;
    base_ = static_cast<uint8_t*>(p);
    if (mprotect(base_ + data_pages_ * page_, page_, PROT_NONE) != 0) {
      munmap(base_, total_);
      base_ = nullptr;
    }
  }
  ~guarded_buffer() {
    if (base_ != nullptr)
      munmap(base_, total_);
  }
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;

  bool valid() const {
    return base_ != nullptr;
  }

  // Copies `size` bytes so they end at the guard page; returns their start.
  const uint8_t* place(const uint8_t* bytes, size_t size) {
    uint8_t* dst = base_ + data_pages_ * page_ - size;
    if (size > 0)
      std::memcpy(dst, bytes, size);
    return dst;
  }

private:
  uint8_t* base_ = nullptr;
  size_t page_ = 0;
  size_t data_pages_ = 0;
  size_t total_ = 0;
};

} // namespace ferry::test
