// failure_reports_choice: whether UCX endpoints to one peer run with failure
// reports (UCP_ERR_HANDLING_MODE_PEER) or without (NONE), decided at the
// peer's hello from the capabilities both nodes told.
//
// Why it matters (UCX 1.13, measured): without failure reports, a peer that
// dies mid-GET over tcp makes the *serving* node's UCX abort the whole
// process ("Endpoint timeout" in ucp_get_req_handler), and a GET to a dead
// owner never ends (it is abandoned). With them, both fail cleanly, but UCX
// drops the shared-memory transports for that endpoint. So: no reports only
// where shared memory would carry the pair, i.e. both nodes have it and run on
// the same machine; reports for every other pair (tcp or a NIC, where they
// cost nothing). The serving side's endpoint follows the mode its reader
// chose, so both nodes apply the same rule.
//
// A node with shared-memory transports tells "ucx_shm:" and its machine
// token (a hash of the host name and the kernel's boot id: two containers
// with their own host names are two machines, as UCX sees them too).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferry {

inline constexpr std::string_view shared_memory_capability_prefix = "ucx_shm:";

/// This machine's token: 16 hex digits.
std::string this_machine_token();

/// "ucx_shm:" and `machine_token`.
std::string shared_memory_capability(std::string_view machine_token);

/// True when both capability lists carry the same "ucx_shm:" token: the
/// two nodes share memory on one machine.
bool shares_memory(const std::vector<std::string>& my_caps,
                   const std::vector<std::string>& peer_caps);

/// True when endpoints to a peer with `peer_caps` must report failures:
/// unless the two nodes share memory.
bool wants_failure_reports(const std::vector<std::string>& my_caps,
                           const std::vector<std::string>& peer_caps);

} // namespace ferry
