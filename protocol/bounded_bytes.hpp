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

/// Loads a sequence of raw bytes into `c` (a std::vector<char> or a
/// std::string) with the bound of load_sequence_length: nothing is
/// allocated for a length that is refused.
template <class Container>
caf::error load_byte_sequence(caf::deserializer& source, Container& c, size_t max,
                              const char* what = "a field") {
  size_t n = 0;
  if (auto err = load_sequence_length(source, max, n, what))
    return err;
  c.resize(n);
  if (n > 0)
    if (auto err = source.apply_raw(n, c.data()))
      return err;
  return source.end_sequence();
}

/// inspect() for a type with its own save(serializer&) and
/// load(deserializer&); any other inspector (to_string) gets `describe()`.
template <class Inspector, class T, class Describe>
typename Inspector::result_type inspect_by_save_load(Inspector& f, T& x,
                                                     Describe describe) {
  if constexpr (std::is_base_of_v<caf::serializer, Inspector>)
    return x.save(f);
  else if constexpr (std::is_base_of_v<caf::deserializer, Inspector>)
    return x.load(f);
  else
    return describe(f);
}

struct bounded_bytes {
  std::vector<char>& bytes;
  size_t max;

  caf::error save(caf::serializer& sink) const;
  caf::error load(caf::deserializer& source);
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bounded_bytes& x) {
  return inspect_by_save_load(f, x, [&](Inspector& g) { return g(x.bytes); });
}

} // namespace ferry
