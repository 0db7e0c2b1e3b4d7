// one_sided_reads: whether a UCX GET between two nodes is a one-sided read
// (shared memory on one machine, or a NIC on both) or one UCX can only
// emulate, decided at the peer's hello from the capabilities both told.
//
// Why it matters (UCX 1.13.1, measured on loopback and read in its source):
// over tcp a GET is emulated: the owner's own UCX worker reads the range and
// sends it back as messages. That is 1.6 to 2.8 times slower than the
// chunked path's messages on loopback (docs/performance.md, "No emulated
// GETs over tcp"), and a reader that dies while its reply is queued aborts
// the *owner* process (ucp_request_try_send has no error path but
// ucs_fatal; docs/known-issues.md). So a pair whose GETs would be emulated
// takes the chunked path unless both nodes allow emulated GETs
// (--rdma-emulated-gets: the consumer offers only with its own, the owner
// grants only with its own).
//
// A node with a NIC transport that reads one-sided (rc_verbs, rc_mlx5,
// dc_mlx5 in UCX 1.13) tells "ucx_nic_rma"; a node with shared-memory
// transports tells its machine token (failure_reports_choice.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferry {

inline constexpr std::string_view nic_rma_capability = "ucx_nic_rma";

/// True when a UCX transport of this name reads a peer's memory one-sided
/// over a NIC.
bool is_nic_rma_transport(std::string_view transport);

/// True when a GET between nodes with these capability lists is a
/// one-sided read: both carry the same shared-memory machine token, or both
/// have a NIC that reads one-sided. Symmetric.
bool reads_one_sided(const std::vector<std::string>& my_caps,
                     const std::vector<std::string>& peer_caps);

} // namespace ferry
