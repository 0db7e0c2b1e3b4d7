// The plain pieces of the control channel (issue 23): the frame codec
// (protocol/control_frame.hpp), the table of calls out
// (rdma/control_calls.hpp), the per-peer choice of channel
// (rdma/control_channel_choice.hpp) and the channel's rules on both sides
// (rdma/control_protocol.hpp).
#include "protocol/control_frame.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rdma/control_calls.hpp"
#include "rdma/control_channel_choice.hpp"
#include "rdma/control_protocol.hpp"
#include "tests/rdma_core/guarded_buffer.hpp"

using namespace ferry;

namespace {

control_frame_view call_frame(control_op op, uint64_t id, std::string_view body) {
  control_frame_view f;
  f.kind = control_kind::call;
  f.op = op;
  f.call_id = id;
  f.sender = 0x77;
  f.pair_token = 0x5eed;
  f.body = body;
  return f;
}

/// An answer to call `id` from `sender`, its body `body`.
control_frame_view answer_view(control_op op, uint64_t id, uint64_t sender,
                                std::string_view body) {
  control_frame_view f;
  f.kind = control_kind::answer;
  f.op = op;
  f.call_id = id;
  f.sender = sender;
  f.body = body;
  return f;
}

/// `n` bytes, byte i being i * step + first (mod 256): no two neighbours alike.
std::string patterned(size_t n, unsigned step, unsigned first) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<char>(i * step + first);
  return out;
}

control_frame_refusal refusal_of(const std::vector<uint8_t>& bytes) {
  auto r = decode_control_frame(bytes.data(), bytes.size());
  EXPECT_FALSE(r.ok());
  return r.refusal;
}

std::vector<uint8_t> valid_call() {
  return encode_control_frame(call_frame(control_op::acquire, 42, R"({"handle":"x"})"));
}

} // namespace

// -- the frame codec ----------------------------------------------------------

TEST(ControlFrame, golden_layout_is_little_endian) {
  auto bytes = encode_control_frame(call_frame(control_op::pull, 0x0102030405060708ull, "ab"));
  const std::vector<uint8_t> expected = {
    0xFE, 1, 1, 3, 0, 0, 0, 0,                      // magic, version, call, pull
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // call id
    2, 0, 0, 0,                                     // body_len
    0, 0, 0, 0,                                     // payload_len
    0x77, 0, 0, 0, 0, 0, 0, 0,                      // sender
    0xed, 0x5e, 0, 0, 0, 0, 0, 0,                   // pair token
    'a', 'b'};
  EXPECT_EQ(bytes, expected);
  auto r = decode_control_frame(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.frame->sender, 0x77u);
  EXPECT_EQ(r.frame->pair_token, 0x5eedu);
}

TEST(ControlFrame, every_kind_and_op_round_trips) {
  const std::string body = "{\"lease_id\":7}";
  for (uint8_t k = 1; k <= 3; ++k) {
    for (uint8_t op = 1; op <= control_op_max; ++op) {
      control_frame_view f;
      f.kind = static_cast<control_kind>(k);
      f.op = static_cast<control_op>(op);
      f.call_id = 1000 + op;
      f.sender = 3;
      // A probe and its answer are empty (a_probe_is_two_way_and_empty).
      bool empty = f.op == control_op::probe && f.kind != control_kind::error;
      f.body = empty ? std::string_view{} : std::string_view{body};
      if (f.kind == control_kind::call && op == 5)
        f.flags = control_flag_one_way;
      auto bytes = encode_control_frame(f);
      ASSERT_FALSE(bytes.empty()) << int(k) << "/" << int(op);
      auto r = decode_control_frame(bytes.data(), bytes.size());
      ASSERT_TRUE(r.ok()) << to_string(r.refusal);
      EXPECT_EQ(r.frame->kind, f.kind);
      EXPECT_EQ(r.frame->op, f.op);
      EXPECT_EQ(r.frame->call_id, f.call_id);
      EXPECT_EQ(r.frame->flags, f.flags);
      EXPECT_EQ(r.frame->body, f.body);
      EXPECT_TRUE(r.frame->payload.empty());
    }
  }
}

TEST(ControlFrame, acquire_answer_carries_an_inline_payload) {
  auto payload = patterned(16 * 1024, 31, 7);
  auto f = answer_view(control_op::acquire, 9, 3, R"({"eager":{"lease_id":3}})");
  f.payload = payload;
  auto bytes = encode_control_frame(f);
  auto r = decode_control_frame(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.frame->body, f.body);
  EXPECT_EQ(r.frame->payload, payload);
}

// A frame in parts: the last field stays where the caller keeps it (so an
// answer's chunk leaves without a copy), and the parts in a row are the frame.
TEST(ControlFrame, parts_view_the_last_field_and_join_to_the_frame) {
  auto chunk = patterned(512 * 1024, 13, 1);
  auto pull = answer_view(control_op::pull, 5, 2, chunk);
  auto parts = encode_control_frame_parts(pull);
  EXPECT_EQ(parts.head.size(), control_frame_header_bytes);
  EXPECT_EQ(parts.tail.data(), chunk.data()); // a view, not a copy
  EXPECT_EQ(join_control_frame(parts), encode_control_frame(pull));
  auto joined = join_control_frame(parts);
  auto r = decode_control_frame(joined.data(), joined.size());
  ASSERT_TRUE(r.ok()) << to_string(r.refusal);
  EXPECT_EQ(r.frame->body, chunk);
  // With a payload, the body goes into the head and the payload is the tail.
  control_frame_view acquire = pull;
  acquire.op = control_op::acquire;
  acquire.body = R"({"eager":{"lease_id":3}})";
  acquire.payload = std::string_view{chunk}.substr(0, 16 * 1024);
  parts = encode_control_frame_parts(acquire);
  EXPECT_EQ(parts.head.size(), control_frame_header_bytes + acquire.body.size());
  EXPECT_EQ(parts.tail.data(), chunk.data());
  EXPECT_EQ(join_control_frame(parts), encode_control_frame(acquire));
  // A frame that breaks a rule has no parts.
  acquire.op = control_op::pull; // a payload on a pull's answer
  EXPECT_TRUE(encode_control_frame_parts(acquire).head.empty());
  EXPECT_TRUE(join_control_frame(encode_control_frame_parts(acquire)).empty());
}

TEST(ControlFrame, refusals_name_the_broken_rule) {
  auto with = [](size_t at, uint8_t value) {
    auto b = valid_call();
    b[at] = value;
    return b;
  };
  EXPECT_EQ(refusal_of({}), control_frame_refusal::too_short);
  auto short_one = valid_call();
  short_one.resize(control_frame_header_bytes - 1);
  EXPECT_EQ(refusal_of(short_one), control_frame_refusal::too_short);
  EXPECT_EQ(refusal_of(with(0, 0xFD)), control_frame_refusal::bad_magic);
  EXPECT_EQ(refusal_of(with(1, 2)), control_frame_refusal::unknown_version);
  EXPECT_EQ(refusal_of(with(2, 0)), control_frame_refusal::unknown_kind);
  EXPECT_EQ(refusal_of(with(2, 4)), control_frame_refusal::unknown_kind);
  EXPECT_EQ(refusal_of(with(3, 0)), control_frame_refusal::unknown_op);
  EXPECT_EQ(refusal_of(with(3, control_op_max + 1)), control_frame_refusal::unknown_op);
  EXPECT_EQ(refusal_of(with(4, 2)), control_frame_refusal::bad_flags);
  EXPECT_EQ(refusal_of(with(5, 1)), control_frame_refusal::nonzero_reserved);
  EXPECT_EQ(refusal_of(with(7, 1)), control_frame_refusal::nonzero_reserved);
  auto zero_id = valid_call();
  std::fill(zero_id.begin() + 8, zero_id.begin() + 16, 0);
  EXPECT_EQ(refusal_of(zero_id), control_frame_refusal::zero_call_id);
  auto zero_sender = valid_call();
  std::fill(zero_sender.begin() + 24, zero_sender.begin() + 32, 0);
  EXPECT_EQ(refusal_of(zero_sender), control_frame_refusal::zero_sender);
  // An answer may not be one-way.
  auto answer = valid_call();
  answer[2] = static_cast<uint8_t>(control_kind::answer);
  answer[4] = control_flag_one_way;
  EXPECT_EQ(refusal_of(answer), control_frame_refusal::bad_flags);
}

TEST(ControlFrame, a_probe_is_two_way_and_empty) {
  auto probe = call_frame(control_op::probe, 9, "");
  EXPECT_TRUE(decode_control_frame(encode_control_frame(probe).data(),
                                   control_frame_header_bytes)
                .ok());
  auto with_body = encode_control_frame(probe);
  with_body.push_back('x');
  with_body[16] = 1; // body_len
  EXPECT_EQ(refusal_of(with_body), control_frame_refusal::bad_probe);
  auto one_way = encode_control_frame(probe);
  one_way[4] = control_flag_one_way;
  EXPECT_EQ(refusal_of(one_way), control_frame_refusal::bad_probe);
  auto answer = encode_control_frame(probe);
  answer[2] = static_cast<uint8_t>(control_kind::answer);
  answer.push_back('x');
  answer[16] = 1;
  EXPECT_EQ(refusal_of(answer), control_frame_refusal::bad_probe);
  // An error frame answering a probe may say why.
  auto error = encode_control_frame(probe);
  error[2] = static_cast<uint8_t>(control_kind::error);
  error.push_back('x');
  error[16] = 1;
  EXPECT_TRUE(decode_control_frame(error.data(), error.size()).ok());
}

TEST(ControlFrame, stated_lengths_must_add_up_to_the_bytes) {
  auto longer = valid_call();
  longer.push_back('x');
  EXPECT_EQ(refusal_of(longer), control_frame_refusal::length_mismatch);
  auto shorter = valid_call();
  shorter.pop_back();
  EXPECT_EQ(refusal_of(shorter), control_frame_refusal::length_mismatch);
  // A body length near 2^32 is refused as too long, never summed.
  auto huge = valid_call();
  huge[16] = huge[17] = huge[18] = huge[19] = 0xFF;
  EXPECT_EQ(refusal_of(huge), control_frame_refusal::body_too_long);
  // A call's body over 64 KiB, stated or real.
  std::string big(max_control_call_body + 1, 'x');
  EXPECT_TRUE(encode_control_frame(call_frame(control_op::acquire, 1, big)).empty());
  auto stated = valid_call();
  stated[18] = 0x01; // body_len += 64 KiB
  EXPECT_EQ(refusal_of(stated), control_frame_refusal::body_too_long);
}

TEST(ControlFrame, a_payload_only_rides_an_acquire_answer) {
  auto b = valid_call(); // a call with a payload of 1 byte
  b[20] = 1;
  b.push_back('p');
  EXPECT_EQ(refusal_of(b), control_frame_refusal::payload_misplaced);
  auto pull_answer = answer_view(control_op::pull, 5, 3, {});
  pull_answer.payload = "p";
  EXPECT_TRUE(encode_control_frame(pull_answer).empty());
  control_frame_view acquire_answer = pull_answer;
  acquire_answer.op = control_op::acquire;
  std::string too_much(max_control_payload + 1, 'p');
  acquire_answer.payload = too_much;
  EXPECT_TRUE(encode_control_frame(acquire_answer).empty());
  acquire_answer.payload = "p";
  EXPECT_FALSE(encode_control_frame(acquire_answer).empty());
}

TEST(ControlFrame, decoder_reads_nothing_past_the_buffer) {
  test::guarded_buffer guard(control_frame_header_bytes + 64);
  ASSERT_TRUE(guard.valid());
  auto good = valid_call();
  // Every prefix of a good frame, ending at the guard page: refused, no fault.
  for (size_t n = 0; n < good.size(); ++n) {
    auto* at = guard.place(good.data(), n);
    EXPECT_FALSE(decode_control_frame(at, n).ok()) << n;
  }
  auto* at = guard.place(good.data(), good.size());
  EXPECT_TRUE(decode_control_frame(at, good.size()).ok());
}

TEST(ControlFrame, error_body_keeps_code_and_bounded_text) {
  auto body = encode_control_error(7, "peer went away");
  std::string_view view{reinterpret_cast<const char*>(body.data()), body.size()};
  auto e = decode_control_error(view, 30);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 7);
  EXPECT_EQ(e->text, "peer went away");
  EXPECT_FALSE(decode_control_error("", 30));
  EXPECT_FALSE(decode_control_error(std::string_view{"\0x", 2}, 30)); // code none
  EXPECT_FALSE(decode_control_error("\x1f", 30));                     // unknown code
  std::string long_text(max_control_error_text + 10, 't');
  auto cut = encode_control_error(3, long_text);
  EXPECT_EQ(cut.size(), 1 + max_control_error_text);
  std::string over = "\x03" + long_text;
  EXPECT_FALSE(decode_control_error(over, 30));
}

// -- the table of calls out ---------------------------------------------------

namespace {

using calls = control_calls<std::string>;
using clock_type = calls::clock_type;

clock_type::time_point at(int ms) {
  return clock_type::time_point{} + std::chrono::milliseconds{ms};
}

} // namespace

TEST(ControlCalls, an_answer_completes_its_call_once) {
  calls t{100};
  auto id = t.start(7, control_op::acquire, at(50), "waiter");
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, 100u);
  auto r = t.answer(7, *id, control_op::acquire);
  ASSERT_EQ(r.verdict, control_answer_verdict::matched);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.completed->waiter, "waiter");
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.answer(7, *id, control_op::acquire).verdict,
            control_answer_verdict::unknown_call);
  EXPECT_FALSE(t.next_deadline());
}

TEST(ControlCalls, another_peer_or_op_cannot_end_a_call) {
  calls t{1};
  auto id = t.start(7, control_op::pull, at(50), "w");
  ASSERT_TRUE(id);
  EXPECT_EQ(t.answer(8, *id, control_op::pull).verdict, control_answer_verdict::wrong_peer);
  EXPECT_EQ(t.answer(7, *id, control_op::acquire).verdict, control_answer_verdict::wrong_op);
  EXPECT_EQ(t.answer(7, *id + 1, control_op::pull).verdict,
            control_answer_verdict::unknown_call);
  EXPECT_EQ(t.size(), 1u); // still waiting for the right answer
  EXPECT_EQ(t.answer(7, *id, control_op::pull).verdict, control_answer_verdict::matched);
}

TEST(ControlCalls, expire_hands_back_calls_past_their_deadline_earliest_first) {
  calls t{1};
  auto late = t.start(1, control_op::acquire, at(300), "late");
  auto early = t.start(2, control_op::pull, at(100), "early");
  auto mid = t.start(1, control_op::metadata, at(200), "mid");
  ASSERT_TRUE(late && early && mid);
  EXPECT_EQ(t.next_deadline(), at(100));
  EXPECT_TRUE(t.expire(at(99)).empty());
  auto gone = t.expire(at(200));
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(gone[0].waiter, "early");
  EXPECT_EQ(gone[1].waiter, "mid");
  EXPECT_EQ(t.next_deadline(), at(300));
  // An answer after its call expired completes nothing.
  EXPECT_EQ(t.answer(2, *early, control_op::pull).verdict,
            control_answer_verdict::unknown_call);
  EXPECT_EQ(t.size(), 1u);
}

TEST(ControlCalls, peer_down_fails_every_call_to_that_peer_at_once) {
  calls t{1};
  t.start(1, control_op::acquire, at(100), "a1");
  t.start(2, control_op::acquire, at(100), "b1");
  t.start(1, control_op::pull, at(100), "a2");
  auto gone = t.peer_down(1);
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(gone[0].waiter, "a1");
  EXPECT_EQ(gone[1].waiter, "a2");
  EXPECT_EQ(t.count_for(1), 0u);
  EXPECT_EQ(t.count_for(2), 1u);
  EXPECT_TRUE(t.peer_down(1).empty());
  EXPECT_EQ(t.expire(at(100)).size(), 1u); // b1 only
}

TEST(ControlCalls, bounds_refuse_before_anything_is_kept) {
  calls t{1, control_calls_limits{3, 2}};
  EXPECT_TRUE(t.start(1, control_op::pull, at(10), "1"));
  EXPECT_TRUE(t.start(1, control_op::pull, at(10), "2"));
  EXPECT_FALSE(t.start(1, control_op::pull, at(10), "3")); // per peer
  EXPECT_TRUE(t.start(2, control_op::pull, at(10), "4"));
  EXPECT_FALSE(t.start(3, control_op::pull, at(10), "5")); // in all
  EXPECT_EQ(t.size(), 3u);
  t.expire(at(10));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(t.start(1, control_op::pull, at(20), "6"));
}

TEST(ControlCalls, ids_are_never_zero_or_repeated_across_the_wrap) {
  calls t{~uint64_t{0} - 1};
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i)
    ids.push_back(*t.start(1, control_op::ref, at(1), "w"));
  EXPECT_EQ(ids[0], ~uint64_t{0} - 1);
  EXPECT_EQ(ids[1], ~uint64_t{0});
  EXPECT_EQ(ids[2], 1u);
  EXPECT_EQ(ids[3], 2u);
  calls from_zero{0};
  EXPECT_EQ(*from_zero.start(1, control_op::ref, at(1), "w"), 1u);
}

// -- which channel a peer gets -----------------------------------------------

TEST(ControlChannelChoice, a_node_serves_the_channel_with_ucx_and_a_setting_that_lets_it) {
  using s = control_channel_setting;
  EXPECT_TRUE(serves_control_channel(s::automatic, true, false));
  EXPECT_FALSE(serves_control_channel(s::caf, true, false));
  EXPECT_FALSE(serves_control_channel(s::automatic, false, false));
  EXPECT_EQ(parse_control_channel_setting("caf"), s::caf);
  EXPECT_EQ(parse_control_channel_setting("auto"), s::automatic);
  EXPECT_EQ(parse_control_channel_setting("ucx_am"), s::ucx_am);
  EXPECT_FALSE(parse_control_channel_setting("ucx"));
  EXPECT_FALSE(parse_control_channel_setting("CAF"));
  EXPECT_STREQ(to_string(control_channel::ucx_am), "ucx_am");
  EXPECT_STREQ(to_string(s::ucx_am), "ucx_am");
  EXPECT_STREQ(to_string(s::automatic), "auto");
}

// With TLS on a node's CAF connections, auto keeps its calls inside TLS;
// ucx_am serves the channel all the same, and caf never does.
TEST(ControlChannelChoice, auto_keeps_the_calls_inside_tls_and_ucx_am_does_not) {
  using s = control_channel_setting;
  EXPECT_FALSE(serves_control_channel(s::automatic, true, true));
  EXPECT_TRUE(serves_control_channel(s::ucx_am, true, true));
  EXPECT_TRUE(serves_control_channel(s::ucx_am, true, false));
  EXPECT_FALSE(serves_control_channel(s::ucx_am, false, true));
  EXPECT_FALSE(serves_control_channel(s::caf, true, true));
}

// -- the channel's rules, both sides (rdma/control_protocol.hpp) ----------------

namespace {

using protocol = control_protocol<std::string>;

constexpr uint64_t node_a = 0xA, node_b = 0xB, node_c = 0xC;
constexpr uint8_t max_code = 30;

/// A and B registered with each other (B's token for A's frames 0xAB, A's
/// for B's 0xBA), C registered with both.
struct three_nodes {
  protocol a{node_a, 1000};
  protocol b{node_b, 5000};
  protocol c{node_c, 9000};
  three_nodes() {
    a.add_peer(node_b, {0xAB, 0xBA});
    b.add_peer(node_a, {0xBA, 0xAB});
    a.add_peer(node_c, {0xAC, 0xCA});
    c.add_peer(node_a, {0xCA, 0xAC});
    b.add_peer(node_c, {0xBC, 0xCB});
    c.add_peer(node_b, {0xCB, 0xBC});
  }
};

template <class T>
T& as(protocol::received& v) {
  EXPECT_TRUE(std::holds_alternative<T>(v));
  return std::get<T>(v);
}

protocol::outgoing sent(std::variant<protocol::outgoing, control_call_refusal> v) {
  EXPECT_TRUE(std::holds_alternative<protocol::outgoing>(v));
  return std::get<protocol::outgoing>(v);
}

} // namespace

TEST(ControlProtocol, a_call_and_its_answer_with_an_inline_payload) {
  three_nodes n;
  auto out = sent(n.a.call_peer(node_b, control_op::acquire, R"({"handle":"h"})", false,
                                at(100), "caller-1"));
  EXPECT_EQ(n.a.calls_out(), 1u);
  auto got = n.b.receive(out.frame, max_code);
  auto& call = as<protocol::incoming_call>(got);
  EXPECT_EQ(call.peer, node_a);
  EXPECT_EQ(call.op, control_op::acquire);
  EXPECT_EQ(call.body(), R"({"handle":"h"})");
  EXPECT_FALSE(call.one_way);
  auto reply = n.b.answer_frame(call, R"({"eager":{"lease_id":4}})", "16 bytes of data");
  ASSERT_TRUE(reply);
  auto back = n.a.receive(*reply, max_code);
  auto& ans = as<protocol::answer>(back);
  EXPECT_EQ(ans.completed.waiter, "caller-1");
  EXPECT_FALSE(ans.failed);
  EXPECT_EQ(ans.body(), R"({"eager":{"lease_id":4}})");
  EXPECT_EQ(ans.payload(), "16 bytes of data");
  // The body and payload are kept as offsets into the message: a copy reads
  // its own bytes.
  protocol::answer copy = ans;
  ans = protocol::answer{};
  EXPECT_EQ(copy.body(), R"({"eager":{"lease_id":4}})");
  EXPECT_EQ(copy.payload(), "16 bytes of data");
  EXPECT_EQ(n.a.calls_out(), 0u);
  // The same answer again completes nothing.
  auto again = n.a.receive(*reply, max_code);
  EXPECT_EQ(as<protocol::dropped>(again).why, control_drop::unknown_call);
}

TEST(ControlProtocol, frames_without_the_pairs_token_or_from_strangers_are_dropped) {
  three_nodes n;
  // C forges a call to B in A's name: it does not know B's token for A.
  control_frame_view forged;
  forged.kind = control_kind::call;
  forged.op = control_op::acquire;
  forged.call_id = 1;
  forged.sender = node_a;
  forged.pair_token = 0xCB; // C's own token for B
  forged.body = "{}";
  auto bytes = encode_control_frame(forged);
  auto got = n.b.receive(bytes, max_code);
  EXPECT_EQ(as<protocol::dropped>(got).why, control_drop::bad_token);
  forged.sender = 0xD; // nobody B knows
  bytes = encode_control_frame(forged);
  got = n.b.receive(bytes, max_code);
  EXPECT_EQ(as<protocol::dropped>(got).why, control_drop::unknown_peer);
  std::vector<uint8_t> junk = {1, 2, 3};
  got = n.b.receive(junk, max_code);
  EXPECT_EQ(as<protocol::dropped>(got).why, control_drop::malformed);
  EXPECT_EQ(n.b.dropped_count(control_drop::bad_token), 1u);
  EXPECT_EQ(n.b.dropped_count(control_drop::unknown_peer), 1u);
  EXPECT_EQ(n.b.dropped_count(control_drop::malformed), 1u);
}

TEST(ControlProtocol, another_registered_peer_cannot_answer_for_the_called_one) {
  three_nodes n;
  auto out = sent(n.a.call_peer(node_b, control_op::pull, "{}", false, at(100), "w"));
  // C answers A's call to B, with its own valid token to A.
  auto call_seen_by_b = n.b.receive(out.frame, max_code);
  auto& call = as<protocol::incoming_call>(call_seen_by_b);
  protocol::incoming_call stolen = call;
  stolen.peer = node_a;
  stolen.reply_token = 0; // C's own token to A, not the one B would answer with
  auto fake = n.c.answer_frame(stolen, "forged chunk");
  ASSERT_TRUE(fake);
  auto got = n.a.receive(*fake, max_code);
  EXPECT_EQ(as<protocol::dropped>(got).why, control_drop::wrong_peer);
  EXPECT_EQ(n.a.calls_out(), 1u);
  auto real = n.b.answer_frame(call, "real chunk");
  auto back = n.a.receive(*real, max_code);
  EXPECT_EQ(as<protocol::answer>(back).body(), "real chunk");
}

TEST(ControlProtocol, one_way_calls_keep_nothing_and_get_no_answer) {
  three_nodes n;
  auto out = sent(n.a.call_peer(node_b, control_op::detach, R"({"lease_id":3})", true,
                                at(100), "unused"));
  EXPECT_EQ(n.a.calls_out(), 0u);
  auto got = n.b.receive(out.frame, max_code);
  auto& call = as<protocol::incoming_call>(got);
  EXPECT_TRUE(call.one_way);
  EXPECT_FALSE(n.b.answer_frame(call, "{}"));
  EXPECT_FALSE(n.b.error_frame(call, 2, "no"));
}

TEST(ControlProtocol, error_answers_carry_code_and_text_and_bad_ones_are_dropped) {
  three_nodes n;
  auto out = sent(n.a.call_peer(node_b, control_op::acquire, "{}", false, at(100), "w"));
  auto got = n.b.receive(out.frame, max_code);
  auto& call = as<protocol::incoming_call>(got);
  // An error body with code 0 (none) is not an error: dropped, call kept.
  control_frame_view bad;
  bad.kind = control_kind::error;
  bad.op = control_op::acquire;
  bad.call_id = call.call_id;
  bad.sender = node_b;
  bad.pair_token = 0xBA;
  bad.body = std::string_view{"\0oops", 5};
  auto bytes = encode_control_frame(bad);
  auto dropped = n.a.receive(bytes, max_code);
  EXPECT_EQ(as<protocol::dropped>(dropped).why, control_drop::bad_error_body);
  EXPECT_EQ(n.a.calls_out(), 1u);
  auto err = n.b.error_frame(call, 2, "no slot for this handle");
  ASSERT_TRUE(err);
  auto back = n.a.receive(*err, max_code);
  auto& ans = as<protocol::answer>(back);
  EXPECT_TRUE(ans.failed);
  EXPECT_EQ(ans.error_code, 2);
  EXPECT_EQ(ans.body(), "no slot for this handle");
}

TEST(ControlProtocol, a_removed_peer_fails_its_calls_and_is_heard_no_more) {
  three_nodes n;
  sent(n.a.call_peer(node_b, control_op::acquire, "{}", false, at(100), "to-b-1"));
  sent(n.a.call_peer(node_c, control_op::acquire, "{}", false, at(100), "to-c"));
  auto out = sent(n.a.call_peer(node_b, control_op::pull, "{}", false, at(100), "to-b-2"));
  auto gone = n.a.remove_peer(node_b);
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(gone[0].waiter, "to-b-1");
  EXPECT_EQ(gone[1].waiter, "to-b-2");
  EXPECT_EQ(n.a.calls_out(), 1u);
  auto call = n.b.receive(out.frame, max_code);
  auto late = n.b.answer_frame(as<protocol::incoming_call>(call), "late");
  auto got = n.a.receive(*late, max_code);
  EXPECT_EQ(as<protocol::dropped>(got).why, control_drop::unknown_peer);
  auto refused = n.a.call_peer(node_b, control_op::pull, "{}", false, at(100), "w");
  EXPECT_EQ(std::get<control_call_refusal>(refused), control_call_refusal::unknown_peer);
}

TEST(ControlProtocol, crossing_hellos_leave_both_sides_able_to_call) {
  // A dials B (tokens 0x1B for frames to B, 0x1A for frames to A) while B
  // dials A (0x2B, 0x2A); A hears its own dial's answer last, B its own.
  protocol a{node_a, 1000};
  protocol b{node_b, 5000};
  a.add_peer(node_b, {0x2B, 0x2A}); // B's dial, answered by A's gateway
  a.add_peer(node_b, {0x1B, 0x1A}); // A's own dial's answer
  b.add_peer(node_a, {0x1A, 0x1B});
  b.add_peer(node_a, {0x2A, 0x2B});
  auto to_b = sent(a.call_peer(node_b, control_op::metadata, "{}", false, at(100), "a"));
  auto at_b = b.receive(to_b.frame, max_code);
  auto& call = as<protocol::incoming_call>(at_b);
  auto back = b.answer_frame(call, "ok");
  ASSERT_TRUE(back);
  auto got = a.receive(*back, max_code);
  EXPECT_EQ(as<protocol::answer>(got).completed.waiter, "a");
  auto to_a = sent(b.call_peer(node_a, control_op::metadata, "{}", false, at(100), "b"));
  EXPECT_TRUE(std::holds_alternative<protocol::incoming_call>(a.receive(to_a.frame, max_code)));
  // Only the last max_tokens_in hellos' tokens count.
  for (uint64_t t = 0; t < protocol::max_tokens_in; ++t)
    b.add_peer(node_a, {0x100 + t, 0x200 + t});
  auto stale = sent(a.call_peer(node_b, control_op::metadata, "{}", false, at(100), "old"));
  auto dropped = b.receive(stale.frame, max_code);
  EXPECT_EQ(as<protocol::dropped>(dropped).why, control_drop::bad_token);
  a.add_peer(node_b, {0x200, 0x100});
  auto fresh = sent(a.call_peer(node_b, control_op::metadata, "{}", false, at(100), "new"));
  EXPECT_TRUE(std::holds_alternative<protocol::incoming_call>(b.receive(fresh.frame, max_code)));
}

TEST(ControlProtocol, a_new_hello_between_paired_nodes_loses_no_frame) {
  // Paired by hello 1 (B's token for A's frames 0xB1, A's for B's 0xA1);
  // A dials again: hello 2 offers 0xA2, B answers with 0xB2.
  protocol a{node_a, 1000};
  protocol b{node_b, 5000};
  a.add_peer(node_b, {0xB1, 0xA1});
  b.add_peer(node_a, {0xA1, 0xB1});
  auto in_flight = sent(a.call_peer(node_b, control_op::pull, "{}", false, at(100), "old"));
  b.add_peer(node_a, {0xA2, 0xB2}, false); // B answered hello 2; A has not heard yet
  // B's own calls keep hello 1's token, which A takes.
  auto from_b = sent(b.call_peer(node_a, control_op::metadata, "{}", false, at(100), "b1"));
  EXPECT_TRUE(std::holds_alternative<protocol::incoming_call>(a.receive(from_b.frame, max_code)));
  // A's call made before hello 2 is answered with hello 1's token.
  auto at_b = b.receive(in_flight.frame, max_code);
  auto answer = b.answer_frame(as<protocol::incoming_call>(at_b), "chunk");
  ASSERT_TRUE(answer);
  auto got = a.receive(*answer, max_code);
  EXPECT_EQ(as<protocol::answer>(got).completed.waiter, "old");
  // A hears hello 2's answer: its calls carry 0xB2, answered with 0xA2.
  a.add_peer(node_b, {0xB2, 0xA2});
  auto fresh = sent(a.call_peer(node_b, control_op::pull, "{}", false, at(100), "new"));
  auto call2 = b.receive(fresh.frame, max_code);
  auto answer2 = b.answer_frame(as<protocol::incoming_call>(call2), "chunk");
  ASSERT_TRUE(answer2);
  auto got2 = a.receive(*answer2, max_code);
  EXPECT_EQ(as<protocol::answer>(got2).completed.waiter, "new");
  // A said ctl_ready: B's calls carry 0xA2 from now on; an unknown token
  // confirms nothing.
  EXPECT_FALSE(b.confirm(node_a, 0xA9));
  EXPECT_TRUE(b.confirm(node_a, 0xA2));
  auto from_b2 = sent(b.call_peer(node_a, control_op::metadata, "{}", false, at(100), "b2"));
  EXPECT_TRUE(std::holds_alternative<protocol::incoming_call>(a.receive(from_b2.frame, max_code)));
  EXPECT_EQ(a.dropped_count(control_drop::bad_token), 0u);
  EXPECT_EQ(b.dropped_count(control_drop::bad_token), 0u);
}

TEST(ControlProtocol, a_peer_heard_only_unconfirmed_is_not_called) {
  protocol b{node_b, 5000};
  b.add_peer(node_a, {0xA1, 0xB1}, false); // answered A's first hello
  auto refused = b.call_peer(node_a, control_op::metadata, "{}", false, at(100), "w");
  EXPECT_EQ(std::get<control_call_refusal>(refused), control_call_refusal::unknown_peer);
  EXPECT_TRUE(b.confirm(node_a, 0xA1));
  sent(b.call_peer(node_a, control_op::metadata, "{}", false, at(100), "w"));
}

TEST(ControlProtocol, calls_over_a_bound_are_refused_before_anything_is_sent) {
  protocol a{node_a, 1, control_calls_limits{2, 1}};
  a.add_peer(node_b, {1, 2});
  a.add_peer(node_c, {3, 4});
  std::string big(max_control_call_body + 1, 'x');
  EXPECT_EQ(std::get<control_call_refusal>(
              a.call_peer(node_b, control_op::acquire, big, false, at(10), "w")),
            control_call_refusal::body_too_long);
  sent(a.call_peer(node_b, control_op::acquire, "{}", false, at(10), "1"));
  EXPECT_EQ(std::get<control_call_refusal>(
              a.call_peer(node_b, control_op::acquire, "{}", false, at(10), "2")),
            control_call_refusal::too_many);
  sent(a.call_peer(node_c, control_op::acquire, "{}", false, at(10), "3"));
  // One-way calls are not kept, so the full table does not stop them.
  sent(a.call_peer(node_c, control_op::release, "{}", true, at(10), "4"));
  EXPECT_EQ(a.expire(at(10)).size(), 2u);
  EXPECT_STREQ(to_string(control_call_refusal::too_many), "too_many");
  EXPECT_STREQ(to_string(control_drop::bad_token), "bad_token");
}

TEST(ControlChannelTokens, a_hello_offers_its_token_once_and_shows_none) {
  auto t = fresh_control_token();
  ASSERT_NE(t, 0u);
  EXPECT_NE(fresh_control_token(), t);
  auto cap = control_token_capability(0x00ab00cd00ef0012);
  EXPECT_EQ(cap, "ucx_am:00ab00cd00ef0012");
  std::vector<std::string> caps{"chunked", "ucx", cap};
  EXPECT_EQ(control_token_of(caps), 0x00ab00cd00ef0012u);
  EXPECT_EQ(shown_capabilities(caps), (std::vector<std::string>{"chunked", "ucx", "ucx_am"}));
  // What a peer may not offer: no token, a zero one, the wrong length or digits.
  for (const char* bad : {"ucx_am", "ucx_am:", "ucx_am:0000000000000000", "ucx_am:abc",
                          "ucx_am:00AB00CD00EF0012", "ucx_am:00ab00cd00ef00123",
                          "ucx_am:00ab00cd00ef001g"})
    EXPECT_FALSE(control_token_of({"chunked", bad})) << bad;
}
