// libFuzzer target: check_packed_rkey on arbitrary bytes, compared with a
// plain bit-by-bit reading of the UCX 1.13 framing written here. Aborts on any
// disagreement; ASan catches any read outside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "rdma/rkey_preparse.hpp"

namespace {

ferry::rkey_check reference(const uint8_t* b, size_t n) {
  using ferry::rkey_check;
  if (n == 0)
    return rkey_check::empty;
  if (n > ferry::max_ucx_rkey_bytes)
    return rkey_check::too_long;
  if (n < 9)
    return rkey_check::truncated;
  if (b[8] >= ferry::ucx_memory_type_count)
    return rkey_check::bad_mem_type;
  size_t pos = 9;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (((b[bit / 8] >> (bit % 8)) & 1u) == 0)
      continue;
    if (pos + 1 > n)
      return rkey_check::truncated;
    pos += 1 + b[pos];
    if (pos > n)
      return rkey_check::truncated;
  }
  return pos == n ? rkey_check::ok : rkey_check::trailing_bytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* copy = static_cast<uint8_t*>(std::malloc(size == 0 ? 1 : size));
  if (size > 0)
    std::memcpy(copy, data, size);
  const auto got = ferry::check_packed_rkey(size == 0 ? nullptr : copy, size);
  if (got != reference(copy, size))
    std::abort();
  if (got == ferry::rkey_check::ok) {
    // An accepted blob stays accepted by nothing shorter or longer.
    if (ferry::check_packed_rkey(copy, size - 1) == ferry::rkey_check::ok)
      std::abort();
  }
  (void) ferry::to_string(got);
  std::free(copy);
  return 0;
}
