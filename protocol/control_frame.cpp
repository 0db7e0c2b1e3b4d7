#include "protocol/control_frame.hpp"

#include <algorithm>
#include <cstring>

#include "protocol/little_endian.hpp"

namespace ferry {

namespace {

// Field offsets of the header; see the table in the header file.
constexpr size_t off_magic = 0;
constexpr size_t off_version = 1;
constexpr size_t off_kind = 2;
constexpr size_t off_op = 3;
constexpr size_t off_flags = 4;
constexpr size_t off_reserved8 = 5;
constexpr size_t off_reserved16 = 6;
constexpr size_t off_call_id = 8;
constexpr size_t off_body_len = 16;
constexpr size_t off_payload_len = 20;
constexpr size_t off_sender = 24;
constexpr size_t off_pair_token = 32;
static_assert(off_pair_token + 8 == control_frame_header_bytes);

control_frame_decode_result refuse(control_frame_refusal r) noexcept {
  control_frame_decode_result res;
  res.refusal = r;
  return res;
}

bool known_kind(uint8_t k) noexcept {
  return k >= static_cast<uint8_t>(control_kind::call)
         && k <= static_cast<uint8_t>(control_kind::error);
}

size_t body_bound(control_kind k) noexcept {
  return k == control_kind::call ? max_control_call_body : max_control_answer_body;
}

/// The rules every frame keeps once its fields are read, shared by the
/// decoder and the encoder (which refuses to write what decode refuses).
std::optional<control_frame_refusal>
check_fields(control_kind kind, uint8_t op, uint8_t flags, uint64_t call_id,
             uint64_t sender, size_t body_len, size_t payload_len) noexcept {
  if (op == 0 || op > control_op_max)
    return control_frame_refusal::unknown_op;
  const uint8_t allowed = kind == control_kind::call ? control_flag_one_way : 0;
  if ((flags & ~allowed) != 0)
    return control_frame_refusal::bad_flags;
  if (call_id == 0)
    return control_frame_refusal::zero_call_id;
  if (sender == 0)
    return control_frame_refusal::zero_sender;
  // A probe is a two-way call with an empty body and an empty answer (an
  // error frame may say why it failed).
  if (op == static_cast<uint8_t>(control_op::probe) && kind != control_kind::error
      && ((flags & control_flag_one_way) != 0 || body_len != 0))
    return control_frame_refusal::bad_probe;
  if (body_len > body_bound(kind))
    return control_frame_refusal::body_too_long;
  if (payload_len != 0
      && !(kind == control_kind::answer && op == static_cast<uint8_t>(control_op::acquire)))
    return control_frame_refusal::payload_misplaced;
  if (payload_len > max_control_payload)
    return control_frame_refusal::payload_too_long;
  return std::nullopt;
}

} // namespace

const char* to_string(control_frame_refusal r) noexcept {
  switch (r) {
    case control_frame_refusal::too_short:
      return "too_short";
    case control_frame_refusal::bad_magic:
      return "bad_magic";
    case control_frame_refusal::unknown_version:
      return "unknown_version";
    case control_frame_refusal::unknown_kind:
      return "unknown_kind";
    case control_frame_refusal::unknown_op:
      return "unknown_op";
    case control_frame_refusal::bad_flags:
      return "bad_flags";
    case control_frame_refusal::nonzero_reserved:
      return "nonzero_reserved";
    case control_frame_refusal::zero_call_id:
      return "zero_call_id";
    case control_frame_refusal::zero_sender:
      return "zero_sender";
    case control_frame_refusal::body_too_long:
      return "body_too_long";
    case control_frame_refusal::payload_misplaced:
      return "payload_misplaced";
    case control_frame_refusal::payload_too_long:
      return "payload_too_long";
    case control_frame_refusal::length_mismatch:
      return "length_mismatch";
    case control_frame_refusal::bad_probe:
      return "bad_probe";
  }
  return "unknown";
}

const char* to_string(control_op op) noexcept {
  switch (op) {
    case control_op::metadata:
      return "metadata";
    case control_op::acquire:
      return "acquire";
    case control_op::pull:
      return "pull";
    case control_op::ref:
      return "ref";
    case control_op::detach:
      return "detach";
    case control_op::release:
      return "release";
    case control_op::lease_renew:
      return "lease_renew";
    case control_op::probe:
      return "probe";
  }
  return "unknown";
}

control_frame_decode_result decode_control_frame(const uint8_t* data,
                                                 size_t size) noexcept {
  // Every read below is at an offset proven to be below `size` first.
  if (data == nullptr || size < control_frame_header_bytes)
    return refuse(control_frame_refusal::too_short);
  if (data[off_magic] != control_frame_magic)
    return refuse(control_frame_refusal::bad_magic);
  if (data[off_version] != control_frame_version_1)
    return refuse(control_frame_refusal::unknown_version);
  if (!known_kind(data[off_kind]))
    return refuse(control_frame_refusal::unknown_kind);
  if (data[off_reserved8] != 0 || load_u16le(data + off_reserved16) != 0)
    return refuse(control_frame_refusal::nonzero_reserved);
  const auto kind = static_cast<control_kind>(data[off_kind]);
  const uint8_t op = data[off_op];
  const uint8_t flags = data[off_flags];
  const uint64_t call_id = load_u64le(data + off_call_id);
  const uint64_t sender = load_u64le(data + off_sender);
  const size_t body_len = load_u32le(data + off_body_len);
  const size_t payload_len = load_u32le(data + off_payload_len);
  if (auto why = check_fields(kind, op, flags, call_id, sender, body_len, payload_len))
    return refuse(*why);
  // Both lengths are bounded far below 2^32, so the sum cannot wrap.
  if (size - control_frame_header_bytes != body_len + payload_len)
    return refuse(control_frame_refusal::length_mismatch);
  control_frame_decode_result res;
  auto& f = res.frame.emplace();
  f.kind = kind;
  f.op = static_cast<control_op>(op);
  f.flags = flags;
  f.call_id = call_id;
  f.sender = sender;
  f.pair_token = load_u64le(data + off_pair_token);
  const char* body = reinterpret_cast<const char*>(data + control_frame_header_bytes);
  f.body = std::string_view{body, body_len};
  f.payload = std::string_view{body + body_len, payload_len};
  return res;
}

control_frame_parts encode_control_frame_parts(const control_frame_view& f) {
  if (!known_kind(static_cast<uint8_t>(f.kind))
      || check_fields(f.kind, static_cast<uint8_t>(f.op), f.flags, f.call_id, f.sender,
                      f.body.size(), f.payload.size()))
    return {};
  control_frame_parts out;
  const bool body_is_tail = f.payload.empty();
  out.tail = body_is_tail ? f.body : f.payload;
  out.head.resize(control_frame_header_bytes + (body_is_tail ? 0 : f.body.size()));
  uint8_t* p = out.head.data();
  p[off_magic] = control_frame_magic;
  p[off_version] = control_frame_version_1;
  p[off_kind] = static_cast<uint8_t>(f.kind);
  p[off_op] = static_cast<uint8_t>(f.op);
  p[off_flags] = f.flags;
  store_u64le(p + off_call_id, f.call_id);
  store_u32le(p + off_body_len, static_cast<uint32_t>(f.body.size()));
  store_u32le(p + off_payload_len, static_cast<uint32_t>(f.payload.size()));
  store_u64le(p + off_sender, f.sender);
  store_u64le(p + off_pair_token, f.pair_token);
  if (!body_is_tail && !f.body.empty())
    std::memcpy(p + control_frame_header_bytes, f.body.data(), f.body.size());
  return out;
}

std::vector<uint8_t> join_control_frame(const control_frame_parts& parts) {
  if (parts.head.empty())
    return {};
  std::vector<uint8_t> out(parts.size());
  // memcpy, not std::copy: from char to uint8_t std::copy is a byte loop,
  // which cost a 512 KiB chunk's answer about half a millisecond (a perf profile).
  std::memcpy(out.data(), parts.head.data(), parts.head.size());
  if (!parts.tail.empty())
    std::memcpy(out.data() + parts.head.size(), parts.tail.data(), parts.tail.size());
  return out;
}

std::vector<uint8_t> encode_control_frame(const control_frame_view& f) {
  return join_control_frame(encode_control_frame_parts(f));
}

std::vector<uint8_t> encode_control_error(uint8_t code, std::string_view text) {
  text = text.substr(0, max_control_error_text);
  std::vector<uint8_t> out;
  out.reserve(1 + text.size());
  out.push_back(code);
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

std::optional<control_error_body> decode_control_error(std::string_view body,
                                                       uint8_t max_code) noexcept {
  if (body.empty())
    return std::nullopt;
  const auto code = static_cast<uint8_t>(body[0]);
  if (code == 0 || code > max_code || body.size() - 1 > max_control_error_text)
    return std::nullopt;
  return control_error_body{code, body.substr(1)};
}

} // namespace ferry
