// ucx_context: one UCP context (ucp_init .. ucp_cleanup) and what it learned
// about the transports it may use.
// Owns: the native ucp_context_h, shared with every worker and memory map
// made from it, so the context is cleaned up only after the last of them.
// Must never: be created before the process's UCX_* environment is final
// (UCX reads it here, once), or be used across a fork() (create contexts
// after forking, in the process that uses them).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ucp/api/ucp.h>

#include "rdma/ucx_status.hpp"

namespace ferry {

/// The native context, shared between the objects that need it alive.
using ucx_context_ptr = std::shared_ptr<ucp_context>;

struct ucx_context_config {
  /// Ask for UCP_FEATURE_AM too (RMA and WAKEUP are always requested: the
  /// GET path needs RMA, ucx_worker::wait_for_events needs WAKEUP).
  bool active_messages = false;
  /// Hint for UCX's lane tables; 0 leaves UCX's default.
  std::size_t estimated_num_eps = 0;
  /// Call apply_ucx_defaults() first (UCX_RCACHE_ENABLE=n, UCX_MEM_EVENTS=n).
  bool apply_defaults = true;
};

/// One transport resource the context may use, as UCX names it:
/// transport "tcp" on device "lo", "posix" on "memory", "self" on "memory0".
struct ucx_transport {
  std::string name;
  std::string device;
};

class ucx_context {
public:
  static ucx_result<ucx_context> create(const ucx_context_config& cfg = {});

  ucx_context(ucx_context&&) noexcept = default;
  ucx_context& operator=(ucx_context&&) noexcept = default;
  ucx_context(const ucx_context&) = delete;
  ucx_context& operator=(const ucx_context&) = delete;
  ~ucx_context() = default;

  ucp_context_h native() const noexcept { return ctx_.get(); }
  /// Shares ownership of the native context (for workers and memory maps).
  const ucx_context_ptr& shared_native() const noexcept { return ctx_; }

  /// The transport resources after UCX_TLS / UCX_NET_DEVICES filtering.
  const std::vector<ucx_transport>& transports() const noexcept {
    return transports_;
  }
  bool has_transport(std::string_view name) const noexcept;

  /// A shared-memory transport is on: posix, sysv, cma, knem or xpmem.
  bool has_shared_memory() const noexcept;

  /// A NIC transport that reads a peer's memory one-sided is on
  /// (one_sided_reads.hpp); without one, a GET to another machine is
  /// emulated over tcp.
  bool has_nic_rma() const noexcept;

  /// A shared-memory transport that can hand a peer the pages themselves is
  /// on (posix, sysv or xpmem). Memory mapped with UCP_MEM_MAP_ALLOCATE is
  /// then read one-sided by a peer on the same host (a memcpy on its side,
  /// no progress needed here). Arenas should be allocated that way then.
  bool prefers_ucx_allocation() const noexcept;
  /// True when no transport pins what it registers (shared memory, tcp,
  /// self): registering memory in place costs microseconds, and a GET may
  /// land in plain memory (a result buffer). A NIC transport would pin it.
  bool registers_without_pinning() const noexcept;

  /// Size UCX reserves in front of each request (UCP_ATTR_FIELD_REQUEST_SIZE).
  std::size_t request_size() const noexcept { return request_size_; }

  /// "self/memory0 tcp/lo" — for logs and test output.
  std::string describe_transports() const;

private:
  ucx_context() = default;

  ucx_context_ptr ctx_;
  std::vector<ucx_transport> transports_;
  std::size_t request_size_ = 0;
};

} // namespace ferry
