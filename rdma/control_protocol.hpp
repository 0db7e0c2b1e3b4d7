// control_protocol: the rules of the control channel (issue 23) on one
// node, both sides, with no UCX and no actors in it: the UCX engine feeds
// it the bytes of each active message and sends the frames it makes.
// Owns: the registered peers with their pair tokens, the calls out
// (control_calls), and the counts of what it dropped, by reason.
//
// Rules:
// - Frames go to and come from registered peers only. Each pair of nodes
//   has two tokens, agreed over their CAF connection: the one this node
//   puts in its frames to the peer (token_out) and the one it expects in
//   the peer's frames (token_in). A frame with another token, or from a
//   peer not registered, is dropped: UCX authenticates nobody.
// - Each hello between a pair agrees on a fresh pair of tokens, and two
//   hellos (each node dialling the other, or a node dialling again) may
//   cross: a node accepts the token_in of a peer's last max_tokens_in
//   hellos, answers a call with the token_out of the hello whose token_in
//   it carried (the caller took that hello's tokens), and makes its own
//   calls with the token_out the peer is known to take (confirmed: the
//   dialler at once, the answering side once the peer says so), so no
//   frame goes with a token its receiver does not have yet.
// - A call's answer completes it only from the peer it went to, with its
//   op (control_calls); a late, repeated or foreign answer is dropped.
// - One-way calls (detach, renew, release) wait for nothing: they are not
//   kept, and the peer sends no answer to them.
// - A peer that is removed fails its calls at once (peer_down); calls past
//   their deadline are handed back by expire().
// Must never: deliver a frame it could not decode, or answer for a peer
// that did not call.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/control_frame.hpp"
#include "rdma/control_calls.hpp"
#include "rdma/received_bytes.hpp"

namespace ferry {

/// Why a received frame was dropped. The names double as metric labels.
enum class control_drop : uint8_t {
  malformed,      // not a frame (protocol/control_frame.hpp says which rule)
  unknown_peer,   // its sender is not a registered peer
  bad_token,      // its token is not the pair's
  unknown_call,   // an answer to no call of ours (late, repeated, never made)
  wrong_peer,     // an answer to a call that went to another peer
  wrong_op,       // an answer whose op is not its call's
  bad_error_body, // an error answer whose body is not code + text
};
inline constexpr size_t control_drop_reasons = 7;

const char* to_string(control_drop d) noexcept;

/// Why a call was not sent.
enum class control_call_refusal : uint8_t {
  unknown_peer,  // no channel to that peer
  too_many,      // the table of calls out is full (in all or for that peer)
  body_too_long, // over max_control_call_body
};

const char* to_string(control_call_refusal r) noexcept;

/// A received frame's bytes and where in them its body and payload lie:
/// offsets, not views, so a copy or a move of it stays valid.
class control_message {
public:
  control_message() = default;

  /// Keeps `bytes`; `body` and `payload` are views into them.
  static control_message keep(received_bytes bytes, std::string_view body,
                              std::string_view payload) {
    control_message m;
    const auto* base = reinterpret_cast<const char*>(bytes.data());
    m.body_at_ = static_cast<size_t>(body.data() - base);
    m.body_len_ = body.size();
    m.payload_at_ = payload.empty() ? 0 : static_cast<size_t>(payload.data() - base);
    m.payload_len_ = payload.size();
    m.bytes_ = std::move(bytes);
    return m;
  }

  std::string_view body() const noexcept { return view(body_at_, body_len_); }
  std::string_view payload() const noexcept { return view(payload_at_, payload_len_); }

private:
  std::string_view view(size_t at, size_t len) const noexcept {
    if (len == 0)
      return {};
    return {reinterpret_cast<const char*>(bytes_.data()) + at, len};
  }

  received_bytes bytes_; // owned, or UCX's buffer held (no copy)
  size_t body_at_ = 0;
  size_t body_len_ = 0;
  size_t payload_at_ = 0;
  size_t payload_len_ = 0;
};

struct control_pair_tokens {
  uint64_t out = 0; // this node puts it in its frames to the peer
  uint64_t in = 0;  // this node expects it in the peer's frames
};

template <class Waiter>
class control_protocol {
public:
  using calls_type = control_calls<Waiter>;
  using call = typename calls_type::call;
  using clock_type = typename calls_type::clock_type;

  control_protocol(uint64_t own_worker_id, uint64_t first_call_id,
                   control_calls_limits limits = {})
    : own_(own_worker_id), calls_(first_call_id, limits) {}

  // -- peers ----------------------------------------------------------------

  /// The tokens_in a peer's frames may carry (those of its latest hellos).
  static constexpr size_t max_tokens_in = 8;

  /// Registers a peer, or adds the tokens of another hello with it. Its
  /// frames may carry `tokens.in` or the token_in of one of its previous
  /// hellos, and a call that came with one is answered with that hello's
  /// token_out. This node's own calls carry `tokens.out` from now on when
  /// `confirmed` (the peer is known to take it), else the one they carried.
  void add_peer(uint64_t worker_id, control_pair_tokens tokens, bool confirmed = true) {
    auto& p = peers_[worker_id];
    if (tokens.in != 0 && tokens.out != 0) {
      auto& pairs = p.pairs;
      pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                                 [&](const control_pair_tokens& t) { return t.in == tokens.in; }),
                  pairs.end());
      if (pairs.size() == max_tokens_in)
        pairs.erase(pairs.begin()); // the oldest hello's
      pairs.push_back(tokens);
    }
    if (confirmed && tokens.out != 0)
      p.out = tokens.out;
  }

  /// The peer now takes `token_out` (one of its hellos' pairs): this node's
  /// calls carry it. False when no pair of the peer has it.
  bool confirm(uint64_t worker_id, uint64_t token_out) {
    auto p = peers_.find(worker_id);
    if (p == peers_.end())
      return false;
    for (const auto& t : p->second.pairs)
      if (t.out == token_out) {
        p->second.out = token_out;
        return true;
      }
    return false;
  }

  bool has_peer(uint64_t worker_id) const { return peers_.count(worker_id) > 0; }

  /// The calls out to `peer`, taken out of the table (the peer stays).
  std::vector<call> take_calls_to(uint64_t worker_id) { return calls_.peer_down(worker_id); }

  /// The peer went away: no more frames from or to it; its calls fail.
  std::vector<call> remove_peer(uint64_t worker_id) {
    peers_.erase(worker_id);
    return calls_.peer_down(worker_id);
  }

  // -- this node calls ------------------------------------------------------

  struct outgoing {
    uint64_t call_id = 0;
    std::vector<uint8_t> frame;
  };

  /// A call's frame; a two-way call is kept until answered or expired.
  std::variant<outgoing, control_call_refusal>
  call_peer(uint64_t peer, control_op op, std::string_view body, bool one_way,
            typename clock_type::time_point deadline, Waiter waiter) {
    auto p = peers_.find(peer);
    if (p == peers_.end() || p->second.out == 0)
      return control_call_refusal::unknown_peer;
    if (body.size() > max_control_call_body)
      return control_call_refusal::body_too_long;
    uint64_t id = 0;
    if (one_way) {
      id = next_one_way_++;
      if (next_one_way_ == 0)
        next_one_way_ = 1;
    } else {
      auto started = calls_.start(peer, op, deadline, std::move(waiter));
      if (!started)
        return control_call_refusal::too_many;
      id = *started;
    }
    control_frame_view f;
    f.kind = control_kind::call;
    f.op = op;
    f.flags = one_way ? control_flag_one_way : 0;
    f.call_id = id;
    f.sender = own_;
    f.pair_token = p->second.out;
    f.body = body;
    return outgoing{id, encode_control_frame(f)};
  }

  // -- what arrives ---------------------------------------------------------

  /// A peer's call, for the owner. Its body stays in the message's bytes.
  struct incoming_call {
    uint64_t peer = 0;
    uint64_t call_id = 0;
    control_op op = control_op::metadata;
    bool one_way = false;
    control_message message;
    // The token_out of the hello whose token_in the call carried: the peer
    // took that hello's tokens, so the answer carries it.
    uint64_t reply_token = 0;
    std::string_view body() const { return message.body(); }
  };

  /// The answer to one of this node's calls. Its body (a pull's chunk, the
  /// error's text) and payload stay in the message's bytes: no copy.
  struct answer {
    call completed;
    bool failed = false;    // an error answer: code and text in body()
    uint8_t error_code = 0; // ferry's errc, as its number
    control_message message;
    std::string_view body() const { return message.body(); }
    std::string_view payload() const { return message.payload(); }
  };

  struct dropped {
    control_drop why = control_drop::malformed;
  };

  using received = std::variant<incoming_call, answer, dropped>;

  /// The bytes of one active message, kept by what it becomes (a call or
  /// an answer views its body in them). `max_error_code`: the highest code
  /// an error answer may carry.
  received receive(received_bytes bytes, uint8_t max_error_code) {
    auto r = decode_control_frame(bytes.data(), bytes.size());
    if (!r.ok())
      return drop(control_drop::malformed);
    const auto& f = *r.frame;
    auto p = peers_.find(f.sender);
    if (p == peers_.end())
      return drop(control_drop::unknown_peer);
    const auto& pairs = p->second.pairs;
    auto pair = std::find_if(pairs.begin(), pairs.end(), [&](const control_pair_tokens& t) {
      return t.in == f.pair_token;
    });
    if (pair == pairs.end())
      return drop(control_drop::bad_token);
    if (f.kind == control_kind::call)
      return incoming_call{f.sender, f.call_id, f.op, f.one_way(),
                           control_message::keep(std::move(bytes), f.body, f.payload),
                           pair->out};
    std::optional<control_error_body> err;
    if (f.kind == control_kind::error) {
      err = decode_control_error(f.body, max_error_code);
      if (!err)
        return drop(control_drop::bad_error_body);
    }
    auto done = calls_.answer(f.sender, f.call_id, f.op);
    switch (done.verdict) {
      case control_answer_verdict::matched:
        break;
      case control_answer_verdict::wrong_peer:
        return drop(control_drop::wrong_peer);
      case control_answer_verdict::wrong_op:
        return drop(control_drop::wrong_op);
      default:
        return drop(control_drop::unknown_call);
    }
    answer a;
    a.completed = std::move(*done.completed);
    if (err) {
      a.failed = true;
      a.error_code = err->code;
      a.message = control_message::keep(std::move(bytes), err->text, {});
    } else {
      a.message = control_message::keep(std::move(bytes), f.body, f.payload);
    }
    return a;
  }

  // -- this node answers ----------------------------------------------------

  /// The answer to `c`. None to a one-way call, to a peer gone since, or
  /// when the answer breaks a frame bound (send an error_frame instead).
  std::optional<std::vector<uint8_t>> answer_frame(const incoming_call& c, std::string_view body,
                                                   std::string_view payload = {}) const {
    return joined(reply(c, control_kind::answer, body, payload));
  }

  /// The same answer in two parts, its last field a view of the caller's
  /// bytes (control_frame_parts): sent gathered, a chunk is not copied.
  std::optional<control_frame_parts> answer_parts(const incoming_call& c, std::string_view body,
                                                  std::string_view payload = {}) const {
    return reply(c, control_kind::answer, body, payload);
  }

  /// An error answer to `c`: ferry's code and a text.
  std::optional<std::vector<uint8_t>> error_frame(const incoming_call& c, uint8_t code,
                                                  std::string_view text) const {
    auto body = encode_control_error(code, text);
    return joined(reply(c, control_kind::error,
                        std::string_view{reinterpret_cast<const char*>(body.data()), body.size()},
                        {}));
  }

  // -- time -----------------------------------------------------------------

  std::vector<call> expire(typename clock_type::time_point now) { return calls_.expire(now); }
  /// A call whose frame could not be sent, taken out (none if not out).
  std::optional<call> cancel(uint64_t call_id) { return calls_.cancel(call_id); }
  std::optional<typename clock_type::time_point> next_deadline() const {
    return calls_.next_deadline();
  }

  size_t calls_out() const noexcept { return calls_.size(); }
  uint64_t dropped_count(control_drop why) const noexcept {
    return drops_[static_cast<size_t>(why)];
  }

private:
  dropped drop(control_drop why) {
    ++drops_[static_cast<size_t>(why)];
    return dropped{why};
  }

  static std::optional<std::vector<uint8_t>> joined(std::optional<control_frame_parts> parts) {
    if (!parts)
      return std::nullopt;
    return join_control_frame(*parts);
  }

  std::optional<control_frame_parts> reply(const incoming_call& c, control_kind kind,
                                           std::string_view body,
                                           std::string_view payload) const {
    auto p = peers_.find(c.peer);
    auto token = c.reply_token != 0 ? c.reply_token : p == peers_.end() ? 0 : p->second.out;
    if (c.one_way || p == peers_.end() || token == 0)
      return std::nullopt;
    control_frame_view f;
    f.kind = kind;
    f.op = c.op;
    f.call_id = c.call_id;
    f.sender = own_;
    f.pair_token = token;
    f.body = body;
    f.payload = payload;
    auto parts = encode_control_frame_parts(f);
    if (parts.head.empty())
      return std::nullopt; // over a bound: the caller's call expires
    return parts;
  }

  uint64_t own_;
  calls_type calls_;
  // One-way calls take ids from their own counter: nobody answers them.
  uint64_t next_one_way_ = 1;
  struct peer_tokens {
    uint64_t out = 0;                       // this node's calls carry it (0: none yet)
    std::vector<control_pair_tokens> pairs; // of its last hellos, oldest first
  };
  std::map<uint64_t, peer_tokens> peers_;
  std::array<uint64_t, control_drop_reasons> drops_{};
};

} // namespace ferry
