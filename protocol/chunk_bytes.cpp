#include "protocol/chunk_bytes.hpp"

#include <cstdint>

#include "protocol/bounded_bytes.hpp"

namespace ferry {

chunk_bytes chunk_bytes::view(std::shared_ptr<const void> keep_alive,
                              const char* data, size_t size) {
  chunk_bytes out;
  out.keep_alive_ = std::move(keep_alive);
  out.data_ = data;
  out.size_ = size;
  return out;
}

chunk_bytes chunk_bytes::allocate(size_t size, char** fill) {
  std::shared_ptr<char[]> room{new char[size]}; // no value-init: no zero fill
  *fill = room.get();
  return view(std::move(room), *fill, size);
}

caf::error chunk_bytes::save(caf::serializer& sink) const {
  return save_byte_sequence(sink, data_, size_);
}

caf::error chunk_bytes::load(caf::deserializer& source) {
  size_t n = 0;
  if (auto err = load_sequence_length(source, SIZE_MAX, n, "a chunk"))
    return err;
  char* fill = nullptr;
  auto fresh = allocate(n, &fill);
  if (n > 0)
    if (auto err = source.apply_raw(n, fill))
      return err;
  *this = std::move(fresh);
  return source.end_sequence();
}

} // namespace ferry
