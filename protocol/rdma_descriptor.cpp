#include "protocol/rdma_descriptor.hpp"

#include <algorithm>
#include <cstdint>

#include "protocol/little_endian.hpp"

namespace ferry {

namespace {

// Field offsets of the header; see the table in the header file.
constexpr size_t off_backend = 0;
constexpr size_t off_version = 1;
constexpr size_t off_flags = 2;
constexpr size_t off_generation = 3;
constexpr size_t off_addr = 11;
constexpr size_t off_len = 19;
constexpr size_t off_rkey_len = 27;
static_assert(off_rkey_len + 2 == descriptor_header_bytes);

/// [addr, addr + len) lies below 2^64 (checked, no wrap-around).
constexpr bool range_fits(uint64_t addr, uint64_t len) noexcept {
  return len <= UINT64_MAX - addr;
}

descriptor_decode_result refuse(descriptor_refusal r) noexcept {
  descriptor_decode_result res;
  res.refusal = r;
  return res;
}

} // namespace

const char* to_string(descriptor_refusal r) noexcept {
  switch (r) {
    case descriptor_refusal::too_short:
      return "too_short";
    case descriptor_refusal::unknown_backend:
      return "unknown_backend";
    case descriptor_refusal::unknown_version:
      return "unknown_version";
    case descriptor_refusal::nonzero_flags:
      return "nonzero_flags";
    case descriptor_refusal::zero_len:
      return "zero_len";
    case descriptor_refusal::range_overflow:
      return "range_overflow";
    case descriptor_refusal::rkey_too_long:
      return "rkey_too_long";
    case descriptor_refusal::rkey_len_mismatch:
      return "rkey_len_mismatch";
    case descriptor_refusal::trailing_bytes:
      return "trailing_bytes";
  }
  return "unknown";
}

std::optional<descriptor_refusal>
validate_descriptor(const rdma_descriptor& d) noexcept {
  if (d.backend != descriptor_backend_ucx)
    return descriptor_refusal::unknown_backend;
  if (d.version != descriptor_version_1)
    return descriptor_refusal::unknown_version;
  if (d.flags != 0)
    return descriptor_refusal::nonzero_flags;
  if (d.len == 0)
    return descriptor_refusal::zero_len;
  if (!range_fits(d.addr, d.len))
    return descriptor_refusal::range_overflow;
  if (d.rkey.size() > max_descriptor_rkey_bytes)
    return descriptor_refusal::rkey_too_long;
  return std::nullopt;
}

std::vector<uint8_t> encode_descriptor(const rdma_descriptor& d) {
  if (validate_descriptor(d))
    return {};
  std::vector<uint8_t> out(descriptor_header_bytes + d.rkey.size());
  uint8_t* p = out.data();
  p[off_backend] = d.backend;
  p[off_version] = d.version;
  p[off_flags] = d.flags;
  store_u64le(p + off_generation, d.generation);
  store_u64le(p + off_addr, d.addr);
  store_u64le(p + off_len, d.len);
  store_u16le(p + off_rkey_len, static_cast<uint16_t>(d.rkey.size()));
  if (!d.rkey.empty())
    std::copy(d.rkey.begin(), d.rkey.end(), p + descriptor_header_bytes);
  return out;
}

descriptor_decode_result decode_descriptor(const uint8_t* data,
                                           size_t size) noexcept {
  // Every read below is at an offset proven to be below `size` first.
  if (data == nullptr || size < descriptor_header_bytes)
    return refuse(descriptor_refusal::too_short);
  if (data[off_backend] != descriptor_backend_ucx)
    return refuse(descriptor_refusal::unknown_backend);
  if (data[off_version] != descriptor_version_1)
    return refuse(descriptor_refusal::unknown_version);
  if (data[off_flags] != 0)
    return refuse(descriptor_refusal::nonzero_flags);
  const uint64_t len = load_u64le(data + off_len);
  if (len == 0)
    return refuse(descriptor_refusal::zero_len);
  const uint64_t addr = load_u64le(data + off_addr);
  if (!range_fits(addr, len))
    return refuse(descriptor_refusal::range_overflow);
  const size_t rkey_len = load_u16le(data + off_rkey_len);
  if (rkey_len > max_descriptor_rkey_bytes)
    return refuse(descriptor_refusal::rkey_too_long);
  const size_t body = size - descriptor_header_bytes; // no underflow: checked
  if (body < rkey_len)
    return refuse(descriptor_refusal::rkey_len_mismatch);
  if (body > rkey_len)
    return refuse(descriptor_refusal::trailing_bytes);
  descriptor_decode_result res;
  rdma_descriptor& d = res.descriptor.emplace();
  d.backend = data[off_backend];
  d.version = data[off_version];
  d.flags = data[off_flags];
  d.generation = load_u64le(data + off_generation);
  d.addr = addr;
  d.len = len;
  const uint8_t* key = data + descriptor_header_bytes;
  d.rkey.assign(key, key + rkey_len);
  return res;
}

} // namespace ferry
