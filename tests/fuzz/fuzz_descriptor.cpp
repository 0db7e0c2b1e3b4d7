// libFuzzer target: decode_descriptor on arbitrary bytes. Besides ASan/UBSan
// findings, it aborts when an accepted input does not re-encode to exactly the
// same bytes, or when the decoder's verdict breaks one of its framing rules.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "protocol/rdma_descriptor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into an exact-size heap buffer so ASan sees any read past the end.
  uint8_t* copy = static_cast<uint8_t*>(std::malloc(size == 0 ? 1 : size));
  if (size > 0)
    std::memcpy(copy, data, size);
  const auto r = ferry::decode_descriptor(size == 0 ? nullptr : copy, size);
  if (r.ok()) {
    const ferry::rdma_descriptor& d = *r.descriptor;
    if (size != ferry::descriptor_header_bytes + d.rkey.size())
      std::abort(); // accepted bytes it did not account for
    if (d.len == 0 || d.flags != 0 || d.rkey.size() > ferry::max_descriptor_rkey_bytes)
      std::abort();
    if (d.len > UINT64_MAX - d.addr)
      std::abort(); // an accepted range must not wrap past 2^64
    const auto again = ferry::encode_descriptor(d);
    if (again.size() != size || std::memcmp(again.data(), copy, size) != 0)
      std::abort(); // round trip changed the bytes
    const auto back = ferry::decode_descriptor(again.data(), again.size());
    if (!back.ok() || *back.descriptor != d)
      std::abort();
  } else if (size >= ferry::descriptor_header_bytes
             && r.refusal == ferry::descriptor_refusal::too_short) {
    std::abort(); // a full header is never too short
  }
  (void) ferry::to_string(r.refusal);
  std::free(copy);
  return 0;
}
