// poll_policy: whether the UCX engine, waiting for the control channel,
// polls (yielding its core between polls) or sleeps on the worker's event
// fd. Plain data; the engine's thread owns it.
//
// - Polling pays while the answer is near and the core is the engine's: it
//   sees the answer at once, where a sleeping thread pays a wake-up. So the
//   engine polls for `spin` after the channel last moved.
// - A yield that comes back late (after `late_yield`) says other threads
//   want the cores: then each yield hands one of them a whole time slice
//   (milliseconds), and a thread that never sleeps is not scheduled first
//   when its data arrives. The engine then sleeps instead, where the
//   kernel schedules a woken thread at once, for `back_off`; after that it
//   tries polling again.
// - A wait UCX refuses with nothing to move (`ucx_wake::stalled`: over
//   shared memory, sends waiting for the peer to read them) returns at
//   once. Many in a row mean the peer needs a core this engine is spinning
//   on: the engine then naps for `stall_nap` after each such wait.
// - The defaults: a prompt hand-off (the other engine copying a 512 KiB
//   chunk, a CAF worker answering) comes back well within 1 ms; a slice
//   lost to a busy thread on a loaded core takes a few ms. Measured on the
//   2-core VM: docs/performance.md, "The control channel under load".
#pragma once

#include <chrono>
#include <cstdint>

namespace ferry {

class poll_policy {
public:
  using clock_type = std::chrono::steady_clock;

  struct params {
    std::chrono::microseconds spin{500};
    std::chrono::microseconds late_yield{1000};
    std::chrono::milliseconds back_off{1000};
    unsigned stall_streak = 8;
    std::chrono::microseconds stall_nap{50};
  };

  poll_policy() = default;
  explicit poll_policy(params p) : p_(p) {}

  /// The channel moved (a frame arrived or went out, a message came).
  void moved(clock_type::time_point now) {
    motion_ = now;
    stalls_ = 0;
  }

  /// Poll now (else sleep on the event fd): the channel moved within
  /// `spin` and no late yield was seen within `back_off`.
  bool poll(clock_type::time_point now) const {
    return now - motion_ < p_.spin && now >= contended_until_;
  }

  /// A yield began at `before` and returned at `after`.
  void yielded(clock_type::time_point before, clock_type::time_point after) {
    if (after - before <= p_.late_yield)
      return;
    contended_until_ = after + p_.back_off;
    ++backoffs_;
  }

  /// A wait came back `stalled`. True when the engine should nap now:
  /// `stall_streak` waits in a row were.
  bool stalled() {
    if (++stalls_ < p_.stall_streak)
      return false;
    ++naps_;
    return true;
  }

  /// A wait came back with events or timed out.
  void not_stalled() { stalls_ = 0; }

  std::chrono::microseconds stall_nap() const noexcept { return p_.stall_nap; }

  /// How often a late yield sent the engine to sleep.
  uint64_t backoffs() const noexcept { return backoffs_; }

  /// How often the engine napped on a stalled wait.
  uint64_t naps() const noexcept { return naps_; }

private:
  params p_;
  clock_type::time_point motion_ = clock_type::now();
  clock_type::time_point contended_until_{};
  uint64_t backoffs_ = 0;
  unsigned stalls_ = 0;
  uint64_t naps_ = 0;
};

} // namespace ferry
