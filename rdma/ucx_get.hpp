// ucx_get: one-sided reads of a peer's registered memory (ucp_get_nbx), as a
// request handle and as a blocking call with a timeout.
// Owns: the in-flight UCX request and, while it runs, references to the
// worker and the remote key it uses.
// Threading: the worker's owning thread posts, tests, waits and destroys.
// Must never: report the destination free while UCX may still write it.
//
// Why a timed-out GET can stay unfinished. UCX 1.13's ucp_request_cancel
// cancels only tag receives: an RMA request is left running. In `none`
// error mode (the one that keeps shared memory) UCX never fails a GET to a
// dead or stalled peer — measured over tcp and over posix/sysv, even after
// the endpoint is closed — and the endpoint cannot be force-closed. So on
// timeout the request is cancelled (effective on later UCX versions) and the
// worker is progressed for a short grace; if it still runs, the result is
// `abandoned`: the destination stays lent to UCX until the request handle
// reports it finished, or until the worker is destroyed (which ends every
// request on it). Recovering an abandoned destination for sure therefore
// means dropping the handle and then the worker with all made on it.
// UCX-allocated memory over posix/sysv is read one-sided and is unaffected:
// those GETs complete whatever the owner does (even after it died).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <ucp/api/ucp.h>

#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_status.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry {

/// After a timeout, how long the worker is progressed for the cancelled
/// request to finish before the GET is reported abandoned.
inline constexpr std::chrono::milliseconds ucx_get_cancel_grace{500};

enum class ucx_get_state {
  in_progress, // test() only: still running
  done,        // all bytes are in the destination
  failed,      // UCX or ferry refused or failed it; destination is free
  timed_out,   // timed out and stopped; destination is free (partly written)
  abandoned,   // timed out and UCX would not stop it: destination still lent
};

const char* to_string(ucx_get_state s) noexcept;

struct ucx_get_result;

/// A posted GET. Empty (default-constructed or moved-from) means nothing is
/// in flight.
class ucx_get_request {
public:
  ucx_get_request() = default;
  ucx_get_request(ucx_get_request&&) noexcept;
  ucx_get_request& operator=(ucx_get_request&&) noexcept;
  ucx_get_request(const ucx_get_request&) = delete;
  ucx_get_request& operator=(const ucx_get_request&) = delete;
  /// If still running: cancel and progress up to ucx_get_cancel_grace. If it
  /// runs even then, the request is handed to UCX (ucp_request_free) and its
  /// remote key is never destroyed (UCX may still read it; the worker
  /// reclaims it). The destination may then be written by any later
  /// progress of the worker, until the worker is destroyed.
  ~ucx_get_request();

  /// UCX still owns the destination.
  bool pending() const noexcept { return req_ != nullptr; }

  /// The state now, without progressing the worker (in_progress, done or
  /// failed). Once finished, the request is released and pending() is false.
  ucx_get_result test();

  /// Drives the worker (progress, then sleeping waits) until the GET
  /// finishes or `timeout` passes; then as described at the top of the
  /// header. `abandoned` leaves *this pending.
  ucx_get_result wait(std::chrono::milliseconds timeout);

private:
  friend ucx_result<ucx_get_request> post_get(ucx_worker&, ucx_endpoint&,
                                              ucx_remote_key&, std::uint64_t, void*,
                                              std::size_t);
  void release() noexcept;

  void* req_ = nullptr;
  ucx_worker_ptr worker_;
  std::shared_ptr<ucx_rkey_holder> key_;
};

struct ucx_get_result {
  ucx_get_state state = ucx_get_state::failed;
  ucs_status_t status = UCS_ERR_NO_MESSAGE; // UCX's status for the request
  std::string error;                        // empty when done
  /// Only after an `abandoned` blocking get(): the request still running.
  /// Keep it (and the destination) until !unfinished.pending().
  ucx_get_request unfinished;

  bool ok() const noexcept { return state == ucx_get_state::done; }
};

/// Posts ucp_get_nbx of `len` bytes at `remote_addr` (owner-authored, inside
/// the region `key` was packed for) into `local_dest`. Refuses, without
/// calling UCX, a key not unpacked on `ep`, an endpoint of another worker, a
/// closed or failed endpoint, or a null destination. len == 0 completes at
/// once. A GET that finishes during the post returns an empty request.
ucx_result<ucx_get_request> post_get(ucx_worker& worker, ucx_endpoint& ep,
                                     ucx_remote_key& key, std::uint64_t remote_addr,
                                     void* local_dest, std::size_t len);

/// post_get + wait(timeout).
ucx_get_result get(ucx_worker& worker, ucx_endpoint& ep, ucx_remote_key& key,
                   std::uint64_t remote_addr, void* local_dest, std::size_t len,
                   std::chrono::milliseconds timeout);

} // namespace ferry
