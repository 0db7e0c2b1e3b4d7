// bench_buffer: a page-aligned, already-touched byte region for the bench's
// own sources and destinations.
// Why: on these VMs the first touch of a fresh 4 KiB page costs ~20 us (a
// 64 MiB buffer takes ~0.4 s to fault in), which would swamp every transfer
// it is used for. The region asks for transparent huge pages (MADV_HUGEPAGE;
// the kernel default here is "madvise") and is touched once at creation, so
// timed code only ever sees warm memory.
// Owns: the mapping. Must never: be used for the buffers a path under test
// allocates itself (that cost is part of what those rows measure).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::bench {

class bench_buffer {
public:
  bench_buffer() = default;
  /// Maps and touches `size` bytes (zeroed). Throws std::bad_alloc on failure.
  explicit bench_buffer(size_t size);
  ~bench_buffer();

  bench_buffer(bench_buffer&& other) noexcept;
  bench_buffer& operator=(bench_buffer&& other) noexcept;
  bench_buffer(const bench_buffer&) = delete;
  bench_buffer& operator=(const bench_buffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

private:
  void release() noexcept;

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
};

} // namespace ferry::bench
