// control_calls: the calls this node has out on the control channel (UCX
// active messages, issue 23) and waits on, by call id. A plain table,
// generic over what a call's waiter is (the channel keeps the caller's
// response promise; tests keep anything). Not thread-safe: the UCX engine
// owns it.
//
// Rules:
// - A call id is never 0 and never reused while the table lives; ids start
//   at a value the owner of the table picks (a random one per process, so
//   a restarted node does not match a late answer meant for its former
//   self).
// - An answer completes a call only when it comes from the peer the call
//   went to and repeats its op; anything else (an unknown or expired id,
//   another peer's call, another op) completes nothing and is reported as
//   such, so a hostile or confused peer can end no call but its own.
// - Every call has a deadline; expire() hands back those past it, and
//   peer_down() every call to a peer that went away, at once.
// - Bounded: at most max_calls in all and max_per_peer to one peer; a call
//   over either bound is refused before anything is sent.
// Must never: complete a call twice, or keep a call past its deadline once
// expire() ran.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "protocol/control_frame.hpp"

namespace ferry {

struct control_calls_limits {
  size_t max_calls = 4096;
  size_t max_per_peer = 1024;
};

enum class control_answer_verdict : uint8_t {
  matched,     // the call is complete: its waiter is handed back
  unknown_call, // no such call (never made, expired, or answered already)
  wrong_peer,  // the call went to another peer
  wrong_op,    // the answer's op is not the call's
};

template <class Waiter>
class control_calls {
public:
  using clock_type = std::chrono::steady_clock;

  struct call {
    uint64_t id = 0;
    uint64_t peer = 0;
    control_op op = control_op::metadata;
    clock_type::time_point deadline;
    Waiter waiter;
  };

  explicit control_calls(uint64_t first_id, control_calls_limits limits = {})
    : next_id_(first_id == 0 ? 1 : first_id), limits_(limits) {}

  /// A new call's id, or none when a bound is reached (nothing is kept).
  std::optional<uint64_t> start(uint64_t peer, control_op op,
                                clock_type::time_point deadline, Waiter waiter) {
    if (calls_.size() >= limits_.max_calls || count_for(peer) >= limits_.max_per_peer)
      return std::nullopt;
    uint64_t id = next_id_++;
    if (next_id_ == 0)
      next_id_ = 1; // 2^64 calls later: still never 0
    calls_.emplace(id, call{id, peer, op, deadline, std::move(waiter)});
    by_deadline_.emplace(deadline, id);
    ++per_peer_[peer];
    return id;
  }

  struct answer_result {
    control_answer_verdict verdict = control_answer_verdict::unknown_call;
    std::optional<call> completed; // set when matched
  };

  /// An answer from `peer` to `id` carrying `op`.
  answer_result answer(uint64_t peer, uint64_t id, control_op op) {
    answer_result res;
    auto i = calls_.find(id);
    if (i == calls_.end())
      return res;
    if (i->second.peer != peer) {
      res.verdict = control_answer_verdict::wrong_peer;
      return res;
    }
    if (i->second.op != op) {
      res.verdict = control_answer_verdict::wrong_op;
      return res;
    }
    res.verdict = control_answer_verdict::matched;
    res.completed = take(i);
    return res;
  }

  /// Takes call `id` out (its frame could not be sent), if it is still out.
  std::optional<call> cancel(uint64_t id) {
    auto i = calls_.find(id);
    if (i == calls_.end())
      return std::nullopt;
    return take(i);
  }

  /// Every call whose deadline is at or before `now`, earliest first.
  std::vector<call> expire(clock_type::time_point now) {
    std::vector<call> out;
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      auto i = calls_.find(by_deadline_.begin()->second);
      out.push_back(take(i));
    }
    return out;
  }

  /// Every call to `peer`, by id.
  std::vector<call> peer_down(uint64_t peer) {
    std::vector<call> out;
    for (auto i = calls_.begin(); i != calls_.end() && count_for(peer) > 0;) {
      auto next = std::next(i);
      if (i->second.peer == peer)
        out.push_back(take(i));
      i = next;
    }
    return out;
  }

  /// When the next call expires, if any is out.
  std::optional<clock_type::time_point> next_deadline() const {
    if (by_deadline_.empty())
      return std::nullopt;
    return by_deadline_.begin()->first;
  }

  size_t size() const noexcept { return calls_.size(); }

  size_t count_for(uint64_t peer) const {
    auto i = per_peer_.find(peer);
    return i == per_peer_.end() ? 0 : i->second;
  }

private:
  using table = std::map<uint64_t, call>;

  call take(typename table::iterator i) {
    call c = std::move(i->second);
    by_deadline_.erase({c.deadline, c.id});
    if (--per_peer_[c.peer] == 0)
      per_peer_.erase(c.peer);
    calls_.erase(i);
    return c;
  }

  uint64_t next_id_;
  control_calls_limits limits_;
  table calls_; // by id
  std::set<std::pair<clock_type::time_point, uint64_t>> by_deadline_;
  std::map<uint64_t, size_t> per_peer_;
};

} // namespace ferry
