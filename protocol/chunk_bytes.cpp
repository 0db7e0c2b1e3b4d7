#include "protocol/chunk_bytes.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/sec.hpp>

#include <string>

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
  auto n = size_;
  if (auto err = sink.begin_sequence(n))
    return err;
  if (n > 0) // apply_raw only reads when saving
    if (auto err = sink.apply_raw(n, const_cast<char*>(data_)))
      return err;
  return sink.end_sequence();
}

caf::error chunk_bytes::load(caf::deserializer& source) {
  size_t n = 0;
  if (auto err = source.begin_sequence(n))
    return err;
  if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&source);
      binary && n > binary->remaining())
    return caf::make_error(caf::sec::end_of_stream,
                           "chunk states " + std::to_string(n) + " bytes, "
                             + std::to_string(binary->remaining()) + " remain");
  char* fill = nullptr;
  auto fresh = allocate(n, &fill);
  if (n > 0)
    if (auto err = source.apply_raw(n, fill))
      return err;
  *this = std::move(fresh);
  return source.end_sequence();
}

} // namespace ferry
