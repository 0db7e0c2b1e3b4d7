// bounded_bytes: a byte-vector field that loads with a bound. CAF 0.17
// loads a std::vector<char> by resizing it to the length the message
// states and only then reading: a peer stating 4 GiB makes the receiver
// allocate and zero 4 GiB before the load fails (found by fuzz_hello).
// This view refuses a length over its bound, or over the bytes the message
// still holds, before it allocates anything. Wrap a field in it inside an
// inspect() overload: bounded_bytes{field, max}.
// Must never: allocate a length the message cannot hold.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/serializer.hpp>

namespace ferry {

/// Saves [data, data + n) as one sequence of raw bytes (the wire form of a
/// std::vector<char>).
caf::error save_byte_sequence(caf::serializer& sink, const char* data, size_t n);

/// Reads a sequence's stated length into `n`, refusing one over `max` or
/// over the bytes the message still holds before anything is allocated;
/// `what` names the field in the error.
caf::error load_sequence_length(caf::deserializer& source, size_t max, size_t& n,
                                const char* what = "a field");

struct bounded_bytes {
  std::vector<char>& bytes;
  size_t max;

  caf::error save(caf::serializer& sink) const;
  caf::error load(caf::deserializer& source);
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bounded_bytes& x) {
  if constexpr (std::is_base_of_v<caf::serializer, Inspector>)
    return x.save(f);
  else if constexpr (std::is_base_of_v<caf::deserializer, Inspector>)
    return x.load(f);
  else
    return f(x.bytes);
}

} // namespace ferry
