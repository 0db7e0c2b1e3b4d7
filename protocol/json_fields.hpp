// Strict readers for fields of control-plane JSON bodies.
// Owns: the rule that a present field must have the right type, and that a
// missing optional field takes the default meaning the old behaviour.
// Must never: accept a negative or fractional number as an unsigned id.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::detail {

/// Thrown for a body that does not fit its schema; decode turns it into
/// errc::malformed_body.
struct body_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline uint64_t as_u64(const nlohmann::json& v, const char* key) {
  if (!v.is_number_unsigned())
    throw body_error(std::string{"field '"} + key
                     + "' must be an unsigned integer");
  return v.get<uint64_t>();
}

inline uint64_t required_u64(const nlohmann::json& j, const char* key) {
  auto i = j.find(key);
  if (i == j.end())
    throw body_error(std::string{"missing field '"} + key + "'");
  return as_u64(*i, key);
}

inline uint64_t optional_u64(const nlohmann::json& j, const char* key,
                             uint64_t fallback) {
  auto i = j.find(key);
  return i == j.end() || i->is_null() ? fallback : as_u64(*i, key);
}

inline bool optional_bool(const nlohmann::json& j, const char* key,
                          bool fallback) {
  auto i = j.find(key);
  if (i == j.end() || i->is_null())
    return fallback;
  if (!i->is_boolean())
    throw body_error(std::string{"field '"} + key + "' must be a boolean");
  return i->get<bool>();
}

inline const nlohmann::json& required_object(const nlohmann::json& j,
                                             const char* key) {
  auto i = j.find(key);
  if (i == j.end() || !i->is_object())
    throw body_error(std::string{"missing object '"} + key + "'");
  return *i;
}

} // namespace ferry::detail
