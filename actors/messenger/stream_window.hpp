// stream_window: the back-pressure rules of one messenger stream, as plain
// state on both ends (no actors, no clock), so they are unit-tested.
//
// - The consumer grants `window` items when it opens the stream; the
//   producer makes an item only while it holds credit, one item at a time.
// - The consumer grants credit back as its caller takes items: once half
//   the window (at least one) has been taken since the last grant.
// - Items reach the caller in the order they were sent, even when a staged
//   one is fetched after a later inline one.
// - A producer that sends past its credit breaks the protocol: the stream
//   ends with an error. A grant never raises the credit above the window.
// Must never: hold more than `window` items for a caller.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "protocol/messenger_wire.hpp"

namespace ferry::messenger {

/// The producer's side: may it ask its source for the next item?
class stream_credit {
public:
  explicit stream_credit(uint32_t window);

  bool may_produce() const { return credit_ > 0 && !asking_ && !ended_; }
  /// An item is being made (the source was asked).
  void asking() { asking_ = true; }
  /// The item went out: one credit spent.
  void produced();
  /// The source answered no item (end or error): nothing more is made.
  void end() { ended_ = true; asking_ = false; }
  /// The consumer took `n` more items.
  void granted(uint32_t n);
  uint32_t credit() const { return credit_; }
  uint32_t window() const { return window_; }
  bool ended() const { return ended_; }

private:
  uint32_t window_;
  uint32_t credit_;
  bool asking_ = false;
  bool ended_ = false;
};

/// The consumer's side: items in order, and the credit to grant back.
class stream_inbox {
public:
  explicit stream_inbox(uint32_t window);

  /// An item arrived; its slot number, or an error when the producer went
  /// past its credit.
  caf::expected<uint64_t> arrived();
  /// The item of `slot` is ready (fetched if it was staged).
  void ready(uint64_t slot, envelope item);
  /// The producer ended the stream (cleanly: an empty error text).
  void end(std::string error = {});
  /// The stream fails now, before any item still waiting.
  void fail(std::string error);

  enum class state { item, waiting, finished, failed };
  struct take_result {
    state what = state::waiting;
    envelope item;         // state::item
    std::string error;     // state::failed
    uint32_t grant = 0;    // credit to send the producer now
  };
  /// What the caller gets next.
  take_result take();

  uint32_t window() const { return window_; }
  size_t held() const { return slots_.size(); }

private:
  struct slot {
    bool ready = false;
    envelope item;
  };
  uint32_t window_;
  uint64_t first_slot_ = 0; // slot number of slots_.front()
  std::deque<slot> slots_;
  uint32_t taken_since_grant_ = 0;
  bool ended_ = false;
  std::string end_error_;
  std::optional<std::string> failure_;
};

} // namespace ferry::messenger
