// direct_copy: one whole-range copy between device memory and host memory
// registered with the context, on a fresh stream, waited on. It is the
// baseline a staged copy is measured against (`ferry bench`'s cuda_direct
// rows) and how fixtures fill or read device memory on either backend.
// With it, two small owners for fixtures: device_buffer (device memory of
// one context) and registered_host (host memory registered while alive).
// Must never: run on a cooperative actor (it blocks on the event).
#pragma once

#include <chrono>
#include <cstddef>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "staging/cuda_api.hpp"
#include "staging/staged_copy.hpp"

namespace ferry::staging {

/// Copies `bytes` between `device` and `host` (registered) in `ctx`.
caf::error direct_copy(cuda_api& api, cuda_context ctx, copy_direction direction,
                       device_ptr device, char* host, size_t bytes,
                       std::chrono::milliseconds bound = std::chrono::seconds{30});

/// direct_copy of plain host memory: `host` is registered with `ctx` for
/// the copy and unregistered after it (a fixture's or a check's buffer).
caf::error direct_copy_plain_host(cuda_api& api, cuda_context ctx, copy_direction direction,
                                  device_ptr device, char* host, size_t bytes,
                                  std::chrono::milliseconds bound = std::chrono::seconds{30});

/// Device memory of `ctx`, freed with it.
class device_buffer {
public:
  static caf::expected<device_buffer> allocate(cuda_api& api, cuda_context ctx,
                                               size_t bytes);
  device_buffer() = default;
  device_buffer(device_buffer&& other) noexcept { *this = std::move(other); }
  device_buffer& operator=(device_buffer&& other) noexcept;
  ~device_buffer() { reset(); }
  device_ptr get() const { return ptr_; }
  size_t size() const { return bytes_; }
  void reset();

private:
  cuda_api* api_ = nullptr;
  cuda_context ctx_ = 0;
  device_ptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// [data, data + bytes) registered with `ctx` while this lives.
class registered_host {
public:
  static caf::expected<registered_host> make(cuda_api& api, cuda_context ctx, char* data,
                                             size_t bytes);
  registered_host() = default;
  registered_host(registered_host&& other) noexcept { *this = std::move(other); }
  registered_host& operator=(registered_host&& other) noexcept;
  ~registered_host() { reset(); }
  void reset();

private:
  cuda_api* api_ = nullptr;
  cuda_context ctx_ = 0;
  char* data_ = nullptr;
};

} // namespace ferry::staging
