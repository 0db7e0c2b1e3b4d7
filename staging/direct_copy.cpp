#include "staging/direct_copy.hpp"

#include <utility>

namespace ferry::staging {

caf::error direct_copy(cuda_api& api, cuda_context ctx, copy_direction direction,
                       device_ptr device, char* host, size_t bytes,
                       std::chrono::milliseconds bound) {
  return in_context(api, ctx, [&]() -> caf::error {
    auto s = api.stream_create();
    if (!s)
      return std::move(s.error());
    auto e = api.event_create();
    if (!e) {
      api.stream_destroy(*s);
      return std::move(e.error());
    }
    caf::error err = direction == copy_direction::to_host
                       ? api.copy_to_host(host, device, bytes, *s)
                       : api.copy_to_device(device, host, bytes, *s);
    if (!err)
      err = api.event_record(*e, *s);
    if (!err)
      err = wait_event(api, *e, bound);
    api.event_destroy(*e);
    api.stream_destroy(*s); // drains what is still queued
    return err;
  });
}

caf::error direct_copy_plain_host(cuda_api& api, cuda_context ctx, copy_direction direction,
                                  device_ptr device, char* host, size_t bytes,
                                  std::chrono::milliseconds bound) {
  auto reg = registered_host::make(api, ctx, host, bytes);
  if (!reg)
    return std::move(reg.error());
  return direct_copy(api, ctx, direction, device, host, bytes, bound);
}

caf::expected<device_buffer> device_buffer::allocate(cuda_api& api, cuda_context ctx,
                                                     size_t bytes) {
  device_buffer b;
  auto err = in_context(api, ctx, [&]() -> caf::error {
    auto p = api.mem_alloc(bytes);
    if (!p)
      return std::move(p.error());
    b.ptr_ = *p;
    return {};
  });
  if (err)
    return err;
  b.api_ = &api;
  b.ctx_ = ctx;
  b.bytes_ = bytes;
  return b;
}

device_buffer& device_buffer::operator=(device_buffer&& other) noexcept {
  if (this != &other) {
    reset();
    std::swap(api_, other.api_);
    std::swap(ctx_, other.ctx_);
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
  }
  return *this;
}

void device_buffer::reset() {
  if (api_ && ptr_)
    in_context(*api_, ctx_, [&] { return api_->mem_free(ptr_); });
  api_ = nullptr;
  ptr_ = 0;
  bytes_ = 0;
}

caf::expected<registered_host> registered_host::make(cuda_api& api, cuda_context ctx,
                                                     char* data, size_t bytes) {
  if (auto err = in_context(api, ctx, [&] { return api.host_register(data, bytes); }))
    return err;
  registered_host r;
  r.api_ = &api;
  r.ctx_ = ctx;
  r.data_ = data;
  return r;
}

registered_host& registered_host::operator=(registered_host&& other) noexcept {
  if (this != &other) {
    reset();
    std::swap(api_, other.api_);
    std::swap(ctx_, other.ctx_);
    std::swap(data_, other.data_);
  }
  return *this;
}

void registered_host::reset() {
  if (api_ && data_)
    in_context(*api_, ctx_, [&] { return api_->host_unregister(data_); });
  api_ = nullptr;
  data_ = nullptr;
}

} // namespace ferry::staging
