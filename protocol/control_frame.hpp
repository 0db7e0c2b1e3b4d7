// control_frame: one rendezvous call or its answer as it travels in a UCX
// active message (the control channel of issue 23), instead of a CAF request.
// Owns: the frame's exact little-endian wire form, the strict decoder that
// accounts for every byte it is given, and the body of an error answer.
// Must never: throw, allocate before the framing is proven, read outside the
// buffer it was handed, or depend on CAF or UCX (it is compiled into a fuzzer).
//
// Wire form (all integers little-endian, 40-byte header, then two sections):
//   offset  0  magic        u8   0xFE
//   offset  1  version      u8   1
//   offset  2  kind         u8   1 call, 2 answer, 3 error answer
//   offset  3  op           u8   control_op (an answer repeats its call's)
//   offset  4  flags        u8   call: bit 0 one-way (no answer); else 0
//   offset  5  reserved     u8   0
//   offset  6  reserved     u16  0
//   offset  8  call_id      u64  the caller's; never 0
//   offset 16  body_len     u32  the body (JSON, chunk bytes, or an error)
//   offset 20  payload_len  u32  bytes after the body: an acquire answer's
//                                inline payload (eager); 0 anywhere else
//   offset 24  sender       u64  the sending node's worker id; never 0
//   offset 32  pair_token   u64  the secret the two nodes agreed on over
//                                their CAF connection (the hello, TLS when
//                                the cluster runs it); UCX authenticates
//                                nobody, so a frame whose token is not the
//                                pair's is dropped by the channel
//   offset 40  body, then payload, and then the buffer ends
//
// An error answer's body: code u8 (ferry's errc, never none), then at most
// max_control_error_text bytes of text saying what went wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ferry {

inline constexpr uint8_t control_frame_magic = 0xFE;
inline constexpr uint8_t control_frame_version_1 = 1;
inline constexpr size_t control_frame_header_bytes = 40;
/// A call's body is a small JSON document.
inline constexpr size_t max_control_call_body = 64 * 1024;
/// An answer's body: a chunk at most as large as the staging chunks.
inline constexpr size_t max_control_answer_body = 64ull << 20;
/// An acquire answer's inline payload (the eager limit is at most this).
inline constexpr size_t max_control_payload = 1ull << 20;
inline constexpr size_t max_control_error_text = 1024;

/// The rendezvous calls the channel carries (the owner's seven _rv_ calls),
/// and the probe: a call with an empty body that the peer's channel answers
/// itself (empty), which proves frames go both ways before a pair's calls
/// take the channel. A node of the first channel version refuses the op
/// (unknown_op): its probe times out and the pair keeps CAF requests.
enum class control_op : uint8_t {
  metadata = 1,
  acquire = 2,
  pull = 3,
  ref = 4,
  detach = 5,
  release = 6,
  lease_renew = 7,
  probe = 8,
};
inline constexpr uint8_t control_op_max = 8;

enum class control_kind : uint8_t { call = 1, answer = 2, error = 3 };

inline constexpr uint8_t control_flag_one_way = 1;

/// A decoded frame: views into the bytes it was decoded from.
struct control_frame_view {
  control_kind kind = control_kind::call;
  control_op op = control_op::metadata;
  uint8_t flags = 0;
  uint64_t call_id = 0;
  uint64_t sender = 0;
  uint64_t pair_token = 0;
  std::string_view body;
  std::string_view payload;

  bool one_way() const noexcept { return (flags & control_flag_one_way) != 0; }
};

/// Why a byte string is not a frame. The names double as metric labels.
enum class control_frame_refusal : uint8_t {
  too_short,        // fewer than the 40 header bytes
  bad_magic,        // byte 0 is not 0xFE
  unknown_version,  // version is not 1
  unknown_kind,     // kind is not call, answer or error
  unknown_op,       // op names no rendezvous call
  bad_flags,        // a flag this version does not define, or one-way off a call
  nonzero_reserved, // the reserved bytes are not zero
  zero_call_id,     // call id 0
  zero_sender,      // sender worker id 0
  body_too_long,    // over the bound for this kind
  payload_misplaced, // a payload anywhere but an acquire's answer
  payload_too_long, // over max_control_payload
  length_mismatch,  // the stated lengths do not add up to the buffer's
  bad_probe,        // a probe's call or answer that is one-way or has a body
};

const char* to_string(control_frame_refusal r) noexcept;
const char* to_string(control_op op) noexcept;

struct control_frame_decode_result {
  std::optional<control_frame_view> frame;
  control_frame_refusal refusal = control_frame_refusal::too_short; // when !frame
  bool ok() const noexcept { return frame.has_value(); }
};

/// Decodes one frame; the views point into `data`.
control_frame_decode_result decode_control_frame(const uint8_t* data,
                                                 size_t size) noexcept;

/// The frame's bytes; empty when `f` breaks a rule decode would refuse.
std::vector<uint8_t> encode_control_frame(const control_frame_view& f);

/// A frame in two parts, for a send that gathers them (a chunk's answer
/// leaves without being copied into a frame): `head` holds the header and
/// every field before the last one, `tail` views the last field where the
/// caller keeps it (the payload when there is one, else the body).
struct control_frame_parts {
  std::vector<uint8_t> head;
  std::string_view tail;
  size_t size() const noexcept { return head.size() + tail.size(); }
};

/// The frame in parts; `head` is empty when `f` breaks a rule decode would
/// refuse. Its parts, one after the other, are encode_control_frame(f).
control_frame_parts encode_control_frame_parts(const control_frame_view& f);

/// The parts in one buffer.
std::vector<uint8_t> join_control_frame(const control_frame_parts& parts);

/// An error answer's body, decoded: ferry's code (as its number) and text.
struct control_error_body {
  uint8_t code = 0;
  std::string_view text;
};

/// The body of an error answer (text cut at max_control_error_text).
std::vector<uint8_t> encode_control_error(uint8_t code, std::string_view text);

/// Empty when the body is not an error body: no code, code 0, code above
/// `max_code`, or text over max_control_error_text.
std::optional<control_error_body> decode_control_error(std::string_view body,
                                                       uint8_t max_code) noexcept;

} // namespace ferry
