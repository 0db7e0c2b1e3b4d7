#include "protocol/messenger_wire.hpp"

#include <caf/sec.hpp>

namespace ferry::messenger {

caf::error bounded_string::save(caf::serializer& sink) const {
  return save_byte_sequence(sink, text.data(), text.size());
}

caf::error bounded_string::load(caf::deserializer& source) {
  return load_byte_sequence(source, text, max, "a name");
}

caf::error bounded_headers::save(caf::serializer& sink) const {
  auto n = hdrs.size();
  if (auto err = sink.begin_sequence(n))
    return err;
  for (auto& [k, v] : hdrs) {
    if (auto err = save_byte_sequence(sink, k.data(), k.size()))
      return err;
    if (auto err = save_byte_sequence(sink, v.data(), v.size()))
      return err;
  }
  return sink.end_sequence();
}

caf::error bounded_headers::load(caf::deserializer& source) {
  size_t n = 0;
  if (auto err = source.begin_sequence(n))
    return err;
  if (n > envelope_limits::max_headers)
    return caf::make_error(caf::sec::invalid_argument,
                           "the header count states " + std::to_string(n) + ", at most "
                             + std::to_string(envelope_limits::max_headers)
                             + " allowed");
  hdrs.clear();
  for (size_t i = 0; i < n; ++i) {
    std::string k;
    std::string v;
    if (auto err = load_byte_sequence(source, k, envelope_limits::max_header_key,
                             "a header key"))
      return err;
    if (auto err = load_byte_sequence(source, v, envelope_limits::max_header_value,
                             "a header value"))
      return err;
    hdrs.insert_or_assign(std::move(k), std::move(v));
  }
  return source.end_sequence();
}

std::string check_envelope(const envelope& e) {
  using L = envelope_limits;
  if (e.handler.size() > L::max_handler_name)
    return "the handler name has " + std::to_string(e.handler.size())
           + " characters, at most " + std::to_string(L::max_handler_name);
  if (e.hdrs.size() > L::max_headers)
    return std::to_string(e.hdrs.size()) + " headers, at most "
           + std::to_string(L::max_headers);
  for (auto& [k, v] : e.hdrs) {
    if (k.size() > L::max_header_key)
      return "a header key of " + std::to_string(k.size()) + " characters, at most "
             + std::to_string(L::max_header_key);
    if (v.size() > L::max_header_value)
      return "header '" + k + "' has a value of " + std::to_string(v.size())
             + " characters, at most " + std::to_string(L::max_header_value);
  }
  if (e.payload.size() > L::max_inline_payload)
    return "an inline payload of " + std::to_string(e.payload.size())
           + " bytes, at most " + std::to_string(L::max_inline_payload);
  return {};
}

} // namespace ferry::messenger
