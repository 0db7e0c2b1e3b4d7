#include "protocol/bounded_bytes.hpp"

#include <string>

#include <caf/binary_deserializer.hpp>
#include <caf/sec.hpp>

namespace ferry {

caf::error save_byte_sequence(caf::serializer& sink, const char* data, size_t n) {
  if (auto err = sink.begin_sequence(n))
    return err;
  if (n > 0) // apply_raw only reads when saving
    if (auto err = sink.apply_raw(n, const_cast<char*>(data)))
      return err;
  return sink.end_sequence();
}

caf::error load_sequence_length(caf::deserializer& source, size_t max, size_t& n,
                                const char* what) {
  if (auto err = source.begin_sequence(n))
    return err;
  if (n > max)
    return caf::make_error(caf::sec::invalid_argument,
                           std::string{what} + " states " + std::to_string(n)
                             + " bytes, at most " + std::to_string(max) + " allowed");
  if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&source);
      binary && n > binary->remaining())
    return caf::make_error(caf::sec::end_of_stream,
                           std::string{what} + " states " + std::to_string(n)
                             + " bytes, " + std::to_string(binary->remaining())
                             + " remain");
  return caf::none;
}

caf::error bounded_bytes::save(caf::serializer& sink) const {
  return save_byte_sequence(sink, bytes.data(), bytes.size());
}

caf::error bounded_bytes::load(caf::deserializer& source) {
  return load_byte_sequence(source, bytes, max);
}

} // namespace ferry
