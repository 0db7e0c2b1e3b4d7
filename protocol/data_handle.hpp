// data_handle: the 128-bit name of a staged payload.
// Owns: the handle value and its four forms (CAF inspect, MessagePack {hi, lo},
// JSON {hi, lo}, text "hhhhhhhhhhhhhhhh-llllllllllllllll").
// Must never: carry bytes or actor references; it is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/meta/type_name.hpp>
#include <msgpack.hpp>
#include <nlohmann/json_fwd.hpp>

namespace ferry {

struct data_handle {
  uint64_t hi = 0; // the owner's worker id
  uint64_t lo = 0; // the slot id on that owner

  uint64_t owner() const { return hi; }
  uint64_t slot() const { return lo; }

  friend bool operator==(const data_handle& a, const data_handle& b) {
    return a.hi == b.hi && a.lo == b.lo;
  }
  friend bool operator!=(const data_handle& a, const data_handle& b) {
    return !(a == b);
  }
  friend bool operator<(const data_handle& a, const data_handle& b) {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }

  MSGPACK_DEFINE_MAP(hi, lo);
};

/// Text form: 16 lowercase hex digits of hi, '-', 16 of lo.
std::string to_string(const data_handle& h);

/// The MessagePack form from a peer's bytes: exactly one map {hi, lo} (or
/// the array form msgpack-c also reads), nothing after it. Unpacks with
/// tight limits, so a stated container or string size costs no
/// allocation of that size; nullopt for anything else.
std::optional<data_handle> unpack_data_handle(const char* data, size_t size);

/// Parses the text form; nullopt on anything else (case-insensitive hex).
std::optional<data_handle> parse_data_handle(std::string_view text);

void to_json(nlohmann::json& j, const data_handle& h);
/// Throws detail::body_error on a missing or mistyped field.
void from_json(const nlohmann::json& j, data_handle& h);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, data_handle& x) {
  return f(caf::meta::type_name("ferry::data_handle"), x.hi, x.lo);
}

} // namespace ferry

template <>
struct std::hash<ferry::data_handle> {
  size_t operator()(const ferry::data_handle& h) const noexcept {
    return std::hash<uint64_t>{}(h.hi * 0x9e3779b97f4a7c15ULL ^ h.lo);
  }
};
