#include "protocol/remote_staging_wire.hpp"

#include <vector>

#include "protocol/hex64.hpp"

namespace ferry {

const char* to_string(stage_direction d) {
  return d == stage_direction::write ? "write" : "read";
}

const char* to_string(stage_cross_mode m) {
  return m == stage_cross_mode::ucx_get ? "ucx_get" : "caf";
}

bool stage_slot_key::plausible() const {
  return address != 0 && !rkey.empty() && rkey.size() <= max_stage_slot_key_bytes;
}

std::string to_string(const remote_device_range& r) {
  return "rdr:" + hex64(r.source_worker) + ":" + hex64(r.epoch) + ":" + hex64(r.registration)
         + ":" + hex64(r.bytes);
}

std::optional<remote_device_range> parse_remote_device_range(const std::string& text) {
  constexpr size_t field = 16;
  constexpr size_t expected = 4 + 4 * field + 3;
  if (text.size() != expected || text.compare(0, 4, "rdr:") != 0)
    return std::nullopt;
  std::vector<uint64_t> v;
  for (size_t at = 4; at < text.size(); at += field + 1) {
    if (at + field < text.size() && text[at + field] != ':')
      return std::nullopt;
    auto x = parse_hex64(std::string_view{text}.substr(at, field));
    if (!x)
      return std::nullopt;
    v.push_back(*x);
  }
  return remote_device_range{v[0], v[1], v[2], v[3]};
}

} // namespace ferry
