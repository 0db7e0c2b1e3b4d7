// get_fences: an owner's fences waiting in this node's UCX engine. An owner
// that quarantined blocks a GET of ours may still read asks for a fence;
// the answer (true) goes once every GET this node had posted to that owner
// when the fence arrived has ended (finished, failed, or, abandoned, let go
// by UCX), so none of them can be served from the owner's memory any more.
// The engine numbers its GETs in the order it posts them; a fence waits for
// those numbered up to the last one posted. Bounded: at most max_waiting
// fences, each answered timeout once its limit passes.
// Must never: answer true while a GET it covers may still run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>

#include <caf/response_promise.hpp>

namespace ferry {

class get_fences {
public:
  using clock_type = std::chrono::steady_clock;
  static constexpr size_t max_waiting = 4096;
  static constexpr std::chrono::seconds limit{10};

  /// Whether a GET to `worker_id` numbered at most `up_to` still runs.
  using runs_fn = std::function<bool(uint64_t worker_id, uint64_t up_to)>;

  /// A fence for the GETs to `worker_id` numbered up to `up_to` (the last
  /// posted); answered now when none runs.
  void add(uint64_t worker_id, uint64_t up_to, caf::response_promise rp,
           const runs_fn& runs, clock_type::time_point now);

  /// Answers every fence whose GETs ended, and those past their limit.
  void check(const runs_fn& runs, clock_type::time_point now);

  /// Answers every fence `err` (the engine stops).
  void fail_all(const caf::error& err);

  bool empty() const { return waiting_.empty(); }
  size_t size() const { return waiting_.size(); }

private:
  struct fence {
    uint64_t worker_id = 0;
    uint64_t up_to = 0;
    caf::response_promise rp;
    clock_type::time_point deadline;
  };
  std::list<fence> waiting_;
};

} // namespace ferry
