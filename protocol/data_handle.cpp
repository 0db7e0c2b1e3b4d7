#include "protocol/data_handle.hpp"


#include "protocol/hex64.hpp"
#include "protocol/json_fields.hpp"

namespace ferry {

std::string to_string(const data_handle& h) {
  return hex64(h.hi) + "-" + hex64(h.lo);
}

std::optional<data_handle> parse_data_handle(std::string_view text) {
  if (text.size() != 33 || text[16] != '-')
    return std::nullopt;
  auto hi = parse_hex64(text.substr(0, 16));
  auto lo = parse_hex64(text.substr(17));
  if (!hi || !lo)
    return std::nullopt;
  return data_handle{*hi, *lo};
}

std::optional<data_handle> unpack_data_handle(const char* data, size_t size) {
  try {
    // At most a 2-entry map of short keys and integers, one level deep.
    msgpack::unpack_limit limit{2, 2, 8, 0, 0, 2};
    size_t offset = 0;
    auto unpacked = msgpack::unpack(data, size, offset, nullptr, nullptr, limit);
    if (offset != size)
      return std::nullopt; // trailing bytes
    return unpacked.get().as<data_handle>();
  } catch (const std::exception&) { // msgpack's unpack, size and type errors
    return std::nullopt;
  }
}

void to_json(nlohmann::json& j, const data_handle& h) {
  j = nlohmann::json{{"hi", h.hi}, {"lo", h.lo}};
}

void from_json(const nlohmann::json& j, data_handle& h) {
  if (!j.is_object())
    throw detail::body_error("a handle must be an object {hi, lo}");
  h.hi = detail::required_u64(j, "hi");
  h.lo = detail::required_u64(j, "lo");
}

} // namespace ferry
