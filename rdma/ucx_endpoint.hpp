// ucx_endpoint: one UCP endpoint to a peer worker, and the remote keys
// unpacked for it.
// Owns: the ucp_ep_h (closed, with a bounded wait, when the object goes) and,
// per unpacked key, one ucp_rkey_h shared by the ucx_remote_key handles to it
// (clone()). Both keep their worker alive.
// Threading: the worker's owning thread creates, uses and destroys them.
// Must never: pass a packed key to ucp_ep_rkey_unpack before its framing
// passed check_packed_rkey (UCX 1.13 unpacks without a length and crashes on
// a short or corrupt blob), or block without a bound when closing.
//
// Error handling mode. `none` (the default) keeps every transport, shared
// memory included, but UCX then reports no peer failure: a GET in flight to
// a dead or stalled peer never completes (measured over tcp and over
// posix/sysv), and a close cannot be forced. `peer` makes UCX 1.13 drop the
// shared-memory transports (over tcp everything still works; with no tcp in
// UCX_TLS connect() fails) in exchange for failure reports (the GET fails
// at once) and forced close. Under `none` every wait here is bounded by
// ferry itself, and a GET that UCX will not end is reported `abandoned`
// (see ucx_get.hpp).
//
// Trust: the worker address given to connect() is read by UCX without a
// length, exactly like a packed key; it must come from ferry's own control
// plane, never from unchecked bytes. Only its size is checked here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <ucp/api/ucp.h>

#include "rdma/ucx_status.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry {

/// Bound on a peer worker address accepted by connect().
inline constexpr std::size_t max_ucx_worker_address_bytes = 64 * 1024;

enum class ucx_error_mode {
  none, // UCP_ERR_HANDLING_MODE_NONE: all transports, no failure reports
  peer, // UCP_ERR_HANDLING_MODE_PEER: tcp only on UCX 1.13, failures reported
};

struct ucx_endpoint_config {
  ucx_error_mode error_mode = ucx_error_mode::none;
  /// How long the destructor (or close() without argument) progresses the
  /// worker waiting for the close to finish.
  std::chrono::milliseconds close_limit{1000};
};

/// The unpacked ucp_rkey_h and the worker whose memory pool holds it
/// (internal; shared between a key and the GETs using it).
struct ucx_rkey_holder {
  ucp_rkey_h key = nullptr;
  ucx_worker_ptr worker;
  /// Set when UCX may still read the key after every owner let go (a GET
  /// that could not be stopped): the key is then never destroyed, only
  /// reclaimed with its worker. Never set otherwise.
  bool leak_on_release = false;
  ucx_rkey_holder() = default;
  ucx_rkey_holder(const ucx_rkey_holder&) = delete;
  ucx_rkey_holder& operator=(const ucx_rkey_holder&) = delete;
  ~ucx_rkey_holder(); // ucp_rkey_destroy, then lets go of the worker
};

class ucx_endpoint;

/// An unpacked remote key, usable only with the endpoint that unpacked it.
/// Destroyed with ucp_rkey_destroy once neither this object nor a GET in
/// flight uses it.
class ucx_remote_key {
public:
  ucx_remote_key() = default;
  ucx_remote_key(ucx_remote_key&&) noexcept = default;
  ucx_remote_key& operator=(ucx_remote_key&&) noexcept = default;
  ucx_remote_key(const ucx_remote_key&) = delete;
  ucx_remote_key& operator=(const ucx_remote_key&) = delete;

  ucp_rkey_h native() const noexcept { return key_ ? key_->key : nullptr; }
  /// Shared by GETs in flight, so the key outlives them.
  const std::shared_ptr<ucx_rkey_holder>& shared_native() const noexcept { return key_; }
  /// True when `ep` is the (still existing) endpoint that unpacked it.
  bool belongs_to(const ucx_endpoint& ep) const noexcept;
  bool empty() const noexcept { return key_ == nullptr; }
  /// A second handle to the same unpacked key (the engine's rkey cache keeps
  /// one, each GET using it another); the key is destroyed with the last.
  ucx_remote_key clone() const {
    ucx_remote_key k;
    k.key_ = key_;
    k.owner_ = owner_;
    return k;
  }

private:
  friend class ucx_endpoint;
  std::shared_ptr<ucx_rkey_holder> key_;
  std::weak_ptr<void> owner_; // the endpoint's internal state
};

class ucx_endpoint {
public:
  /// Creates an endpoint on `worker` to the peer whose packed worker address
  /// is [address, address + size) (ucp_ep_create with the remote address).
  /// Wire-up finishes in the background while the worker progresses.
  static ucx_result<ucx_endpoint> connect(ucx_worker& worker, const void* address,
                                          std::size_t size,
                                          const ucx_endpoint_config& cfg = {});
  static ucx_result<ucx_endpoint> connect(ucx_worker& worker,
                                          const std::vector<char>& address,
                                          const ucx_endpoint_config& cfg = {}) {
    return connect(worker, address.data(), address.size(), cfg);
  }

  ucx_endpoint(ucx_endpoint&&) noexcept;
  ucx_endpoint& operator=(ucx_endpoint&&) noexcept;
  ucx_endpoint(const ucx_endpoint&) = delete;
  ucx_endpoint& operator=(const ucx_endpoint&) = delete;
  /// close() with the configured limit, if not closed yet.
  ~ucx_endpoint();

  /// Unpacks a packed remote key for this endpoint. The blob is refused,
  /// without reaching UCX, unless check_packed_rkey says its framing is ok.
  ucx_result<ucx_remote_key> unpack_rkey(const std::uint8_t* data, std::size_t size);
  ucx_result<ucx_remote_key> unpack_rkey(const std::vector<std::uint8_t>& packed) {
    return unpack_rkey(packed.data(), packed.size());
  }

  /// Starts a flush (ucp_ep_flush_nbx), which finishes once the endpoint's
  /// wireup and everything posted on it did: eager wireup waits on it.
  /// True when it finished at once or runs; false when refused (closed).
  bool start_flush();
  /// True while a started flush still runs (frees it once finished).
  bool flush_pending();

  /// Closes (ucp_ep_close_nbx: flush in `none` mode, forced in `peer` mode)
  /// and progresses the worker until done or `limit` passed. After a limit
  /// the close goes on inside UCX and finishes when the worker is destroyed.
  /// Either way the endpoint is unusable afterwards.
  ucx_status close(std::chrono::milliseconds limit);
  ucx_status close();

  /// Null after close() or a move.
  ucp_ep_h native() const noexcept;
  ucp_worker_h worker() const noexcept;
  ucx_error_mode error_mode() const noexcept;
  /// In `peer` mode: the failure UCX reported for this endpoint, UCS_OK if
  /// none. Always UCS_OK in `none` mode.
  ucs_status_t failure() const noexcept;

  struct state; // internal; stable address for UCX's error callback

private:
  friend class ucx_remote_key;
  explicit ucx_endpoint(std::shared_ptr<state> st);
  std::shared_ptr<state> st_; // shared only with weak references from keys
};

} // namespace ferry
