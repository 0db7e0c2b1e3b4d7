#include "rdma/rkey_preparse.hpp"

namespace ferry {

const char* to_string(rkey_check c) noexcept {
  switch (c) {
    case rkey_check::ok:
      return "ok";
    case rkey_check::empty:
      return "empty";
    case rkey_check::too_long:
      return "too_long";
    case rkey_check::truncated:
      return "truncated";
    case rkey_check::bad_mem_type:
      return "bad_mem_type";
    case rkey_check::trailing_bytes:
      return "trailing_bytes";
  }
  return "unknown";
}

rkey_check check_packed_rkey(const uint8_t* data, size_t size) noexcept {
  if (size == 0 || data == nullptr)
    return rkey_check::empty;
  if (size > max_ucx_rkey_bytes)
    return rkey_check::too_long;
  if (size < ucx_rkey_fixed_bytes)
    return rkey_check::truncated;
  uint64_t md_map = 0;
  for (size_t i = 0; i < 8; ++i)
    md_map |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (data[8] >= ucx_memory_type_count)
    return rkey_check::bad_mem_type;
  // `pos` is the offset UCX's parse has reached; it never passes `size`
  // before being compared, and size <= 1024 keeps it far from overflow.
  size_t pos = ucx_rkey_fixed_bytes;
  for (; md_map != 0; md_map &= md_map - 1) { // one round per set bit
    if (pos >= size)
      return rkey_check::truncated; // no room for the key_len byte
    const size_t key_len = data[pos];
    ++pos;
    if (key_len > size - pos)
      return rkey_check::truncated; // the key runs past the blob
    pos += key_len;
  }
  return pos == size ? rkey_check::ok : rkey_check::trailing_bytes;
}

} // namespace ferry
