// ucx_worker: one UCP worker, its packed address, progress, and a sleeping
// wait for its events.
// Owns: the native ucp_worker_h (UCS_THREAD_MODE_SINGLE), shared with the
// endpoints, remote keys and requests made on it so it is destroyed after
// the last of them; a copy of its packed address.
// Threading: the worker belongs to one thread, the one that calls progress()
// and wait_for_events() and that creates and destroys everything made on it.
// signal() is the only member another thread may call, and only while the
// worker object is alive. One exception to the destroying: a share of the
// native worker held past its owner (a message buffer held past its inbox,
// ucx_active_message.hpp) destroys it on the thread that drops the last
// share, once nothing else uses it.
// Must never: spin while waiting (wait_for_events sleeps in poll), or be
// touched by two threads at once (UCX gives no locking in SINGLE mode).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include <ucp/api/ucp.h>

#include "rdma/ucx_context.hpp"
#include "rdma/ucx_status.hpp"

namespace ferry {

/// The native worker, shared between the objects that need it alive. The
/// deleter destroys the worker and then lets go of the context.
using ucx_worker_ptr = std::shared_ptr<ucp_worker>;

/// Why wait_for_events returned.
enum class ucx_wake {
  events,    // UCX reported activity or another thread called signal()
  timed_out, // nothing happened within the limit
  stalled,   // UCX would not sleep (arm said busy) and progress moved
             // nothing: it holds work only the peer can move on, or a
             // signal() was consumed. Many in a row: the peer needs a core
};

/// The sleeping wait behind ucx_worker::wait_for_events, for objects that
/// hold only the native worker (endpoints closing, GET requests). Same
/// threading rule: only the worker's owning thread may call it.
ucx_result<ucx_wake> wait_for_worker_events(ucp_worker_h worker,
                                            std::chrono::milliseconds max);

class ucx_worker {
public:
  static ucx_result<ucx_worker> create(const ucx_context& context);

  ucx_worker(ucx_worker&&) noexcept = default;
  ucx_worker& operator=(ucx_worker&&) noexcept = default;
  ucx_worker(const ucx_worker&) = delete;
  ucx_worker& operator=(const ucx_worker&) = delete;
  ~ucx_worker() = default;

  ucp_worker_h native() const noexcept { return worker_.get(); }
  const ucx_worker_ptr& shared_native() const noexcept { return worker_; }

  /// The packed worker address (ucp_worker_get_address), for a peer's
  /// ucx_endpoint::connect. Opaque bytes; only UCX can read them.
  const std::vector<char>& address() const noexcept { return address_; }

  /// One ucp_worker_progress; returns how many events it processed.
  unsigned progress();

  /// Progresses, then, when nothing is pending, sleeps in poll() on the
  /// worker's event fd until UCX activity, a signal(), or `max` has passed.
  /// Returns `events` early whenever there may be something to look at
  /// (including when progress itself did work), and `stalled` when UCX
  /// would not sleep but nothing moved: callers loop on their own
  /// condition. A signal() sent before the call is not lost: the next wait
  /// returns at once (`stalled`, as arm consumed it).
  ucx_result<ucx_wake> wait_for_events(std::chrono::milliseconds max);

  /// Wakes a thread sleeping in wait_for_events (ucp_worker_signal).
  /// The only member that may be called from another thread.
  ucx_status signal() const;

private:
  ucx_worker() = default;

  ucx_worker_ptr worker_;
  std::vector<char> address_;
};

} // namespace ferry
