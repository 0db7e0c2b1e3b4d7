// The RDMA kill switch: FERRY_RDMA_RENDEZVOUS_DISABLE, read once at node start.
// Only 1, true, yes and on (any case) engage it; any other value leaves the
// RDMA path on (a typo shows in the path metrics, not as a silent slowdown).
#pragma once

namespace ferry {

constexpr const char* kill_switch_env = "FERRY_RDMA_RENDEZVOUS_DISABLE";

/// Allows GETs that UCX emulates over tcp (--rdma-emulated-gets) when
/// engaged, read once at node start like the kill switch.
constexpr const char* emulated_gets_env = "FERRY_RDMA_EMULATED_GETS";

/// True when `value` (may be null) engages the kill switch: 1, true, yes or
/// on, in any case. ferry's other on/off environment switches parse the same.
bool kill_switch_engaged(const char* value);

/// Reads the environment variable.
bool kill_switch_from_env();

} // namespace ferry
