#include "staging/staged_copy.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "protocol/errors.hpp"

namespace ferry::staging {

caf::error wait_event(cuda_api& api, cuda_event e, std::chrono::milliseconds bound) {
  auto until = std::chrono::steady_clock::now() + bound;
  auto pause = std::chrono::microseconds{0};
  for (;;) {
    auto s = api.event_query(e);
    if (!s)
      return std::move(s.error());
    if (*s == event_state::complete)
      return {};
    if (std::chrono::steady_clock::now() >= until)
      return make_error(errc::timeout, "a staging chunk's copy did not complete within "
                                         + std::to_string(bound.count()) + " ms");
    if (pause.count() == 0)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(pause);
    pause = std::min(std::chrono::microseconds{200}, pause + std::chrono::microseconds{10});
  }
}

namespace {

/// One half of the chunk and the piece of the range it holds now.
struct slot {
  char* memory = nullptr;
  cuda_event event = 0;
  bool in_flight = false; // a device copy into or out of it may run
  size_t offset = 0, bytes = 0;
};

/// The copy's state: the two halves, where the walk is, the first error.
class pipeline {
public:
  pipeline(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
           const std::function<void(size_t)>& on_piece)
    : api_(api), chunk_(chunk), job_(job), on_piece_(on_piece) {
    for (int i = 0; i < 2; ++i) {
      slots_[i].memory = chunk.data() + i * chunk.half();
      slots_[i].event = chunk.events[i];
    }
  }

  copy_result run() {
    size_t next = 0; // the next offset to issue
    int turn = 0;    // the slot issued next
    // Fill both halves, then: drain the older one, refill it, and so on.
    while (!r_.error && (next < job_.bytes || busy())) {
      auto& s = slots_[turn];
      if (s.in_flight && !drain(s))
        break;
      if (next < job_.bytes && !past_deadline(next)) {
        issue(s, next, std::min(chunk_.half(), job_.bytes - next));
        next += s.bytes;
      }
      turn ^= 1;
    }
    // A failure leaves pieces in flight: let them finish before the chunk
    // may be reused (a hung one keeps the chunk retained).
    for (auto& s : slots_)
      if (s.in_flight && wait_event(api_, s.event, job_.event_bound))
        r_.chunk_ok = false;
    if (!r_.error)
      r_.completed = job_.bytes;
    return r_;
  }

private:
  bool busy() const { return slots_[0].in_flight || slots_[1].in_flight; }

  bool past_deadline(size_t offset) {
    if (std::chrono::steady_clock::now() < job_.deadline)
      return false;
    r_.error = make_error(errc::timeout, "the staged copy passed its deadline after "
                                           + std::to_string(offset) + " of "
                                           + std::to_string(job_.bytes) + " bytes");
    return true;
  }

  void issue(slot& s, size_t offset, size_t n) {
    s.offset = offset;
    s.bytes = n;
    bool to_host = job_.direction == copy_direction::to_host;
    if (!to_host)
      std::memcpy(s.memory, job_.host + offset, n);
    auto err = to_host ? api_.copy_to_host(s.memory, job_.device + offset, n, chunk_.stream)
                       : api_.copy_to_device(job_.device + offset, s.memory, n,
                                             chunk_.stream);
    if (err) {
      r_.error = std::move(err); // not queued
      return;
    }
    if (auto e = api_.event_record(s.event, chunk_.stream)) {
      r_.error = std::move(e); // queued with no event to wait on: uncertain
      r_.chunk_ok = false;
      return;
    }
    s.in_flight = true;
  }

  /// Waits for `s`'s piece and, to host, copies it out. False on error.
  bool drain(slot& s) {
    if (auto err = wait_event(api_, s.event, job_.event_bound)) {
      r_.error = std::move(err);
      r_.chunk_ok = false; // it may still run
      s.in_flight = false; // nothing more to wait for: it is retained
      return false;
    }
    s.in_flight = false;
    if (job_.direction == copy_direction::to_host)
      std::memcpy(job_.host + s.offset, s.memory, s.bytes);
    ++r_.pieces;
    if (on_piece_)
      on_piece_(s.bytes);
    return true;
  }

  cuda_api& api_;
  pinned_chunk& chunk_;
  const copy_job& job_;
  const std::function<void(size_t)>& on_piece_;
  slot slots_[2];
  copy_result r_;
};

} // namespace

copy_result run_staged_copy(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
                            const std::function<void(size_t)>& on_piece) {
  if (auto err = api.push_context(chunk.key.ctx)) {
    copy_result r;
    r.error = std::move(err);
    return r; // nothing ran: the chunk is as it was
  }
  auto r = pipeline{api, chunk, job, on_piece}.run();
  if (api.pop_context())
    r.chunk_ok = false;
  return r;
}

} // namespace ferry::staging
