// libFuzzer target: decode_control_frame (the control channel's frames, issue
// 23) on arbitrary bytes. Besides ASan/UBSan findings, it aborts when an
// accepted frame does not re-encode to exactly the same bytes, when its views
// leave the input, or when it breaks a bound the decoder promises; an error
// answer's body goes through decode_control_error too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "protocol/control_frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into an exact-size heap buffer so ASan sees any read past the end.
  auto* copy = static_cast<uint8_t*>(std::malloc(size == 0 ? 1 : size));
  if (size > 0)
    std::memcpy(copy, data, size);
  const auto r = ferry::decode_control_frame(size == 0 ? nullptr : copy, size);
  if (r.ok()) {
    const auto& f = *r.frame;
    const auto* begin = reinterpret_cast<const char*>(copy);
    if (f.body.data() != begin + ferry::control_frame_header_bytes
        || f.payload.data() != f.body.data() + f.body.size()
        || ferry::control_frame_header_bytes + f.body.size() + f.payload.size() != size)
      std::abort(); // views that do not tile the input
    if (f.call_id == 0 || f.sender == 0 || (f.one_way() && f.kind != ferry::control_kind::call))
      std::abort();
    if (!f.payload.empty()
        && !(f.kind == ferry::control_kind::answer && f.op == ferry::control_op::acquire))
      std::abort();
    const auto again = ferry::encode_control_frame(f);
    if (again.size() != size || std::memcmp(again.data(), copy, size) != 0)
      std::abort(); // the round trip changed the bytes
    if (f.kind == ferry::control_kind::error) {
      if (auto e = ferry::decode_control_error(f.body, 255)) {
        if (e->code == 0 || e->text.size() > ferry::max_control_error_text)
          std::abort();
      }
    }
    (void) ferry::to_string(f.op);
  } else if (size >= ferry::control_frame_header_bytes
             && r.refusal == ferry::control_frame_refusal::too_short) {
    std::abort(); // a full header is never too short
  }
  (void) ferry::to_string(r.refusal);
  std::free(copy);
  return 0;
}
