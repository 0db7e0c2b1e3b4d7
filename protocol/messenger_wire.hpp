// messenger_wire: what messengers send each other. An envelope is a
// handler name, headers (a string map) and a payload (bytes); a reply is an
// envelope with no handler name. Every field a peer states loads with a
// bound, checked before anything of that size is allocated (CAF 0.17 would
// resize a byte vector or a string to any stated length first).
// Must never: allocate a length a peer stated without checking it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include "protocol/bounded_bytes.hpp"
#include "protocol/byte_buffer.hpp"

namespace ferry::messenger {

using headers = std::map<std::string, std::string>;

/// Bounds on what a peer may state in an envelope.
struct envelope_limits {
  static constexpr size_t max_handler_name = 255;
  static constexpr size_t max_headers = 64;
  static constexpr size_t max_header_key = 255;
  static constexpr size_t max_header_value = 4096;
  // The largest payload that travels inline, in one message. Larger ones
  // go by handle (transparent staging); the sender refuses an inline
  // payload over this with a clear error.
  static constexpr size_t max_inline_payload = 256ull << 20;
};

struct envelope {
  std::string handler; // empty in a reply
  headers hdrs;
  byte_buffer payload;
};

/// The headers of an envelope on the wire, each string and the count bounded.
struct bounded_headers {
  headers& hdrs;
  caf::error save(caf::serializer& sink) const;
  caf::error load(caf::deserializer& source);
};

/// A string on the wire with a bound on its stated length.
struct bounded_string {
  std::string& text;
  size_t max;
  caf::error save(caf::serializer& sink) const;
  caf::error load(caf::deserializer& source);
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bounded_headers& x) {
  return inspect_by_save_load(f, x, [&](Inspector& g) { return g(x.hdrs); });
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bounded_string& x) {
  return inspect_by_save_load(f, x, [&](Inspector& g) { return g(x.text); });
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, envelope& x) {
  bounded_string handler{x.handler, envelope_limits::max_handler_name};
  bounded_headers hdrs{x.hdrs};
  bounded_bytes payload{x.payload, envelope_limits::max_inline_payload};
  return f(caf::meta::type_name("ferry::messenger::envelope"), handler, hdrs,
           payload);
}

/// The same bounds for an envelope built locally (before it is sent):
/// empty when it may be sent, else what is wrong.
std::string check_envelope(const envelope& e);

} // namespace ferry::messenger
