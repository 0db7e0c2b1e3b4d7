// peer_roles: what `ferry bench-peer` does — the far side of each
// two-process scenario. Each role prints "ready ..." on stdout once it can
// serve, answers one line per command line on stdin, and returns when stdin
// says "quit" or closes (so it never outlives the bench).
//   tcp         plain socket server: 8-byte size request -> that many bytes
//   ucx         registered region + busy progress loop for ucp_get_nbx
//               (--am-echo: and pongs to active-message pings)
//   caf         CAF actor: payload as one reply message; tiny ping
//   ferry-owner ferry::node: "stage SIZE" registers a payload, prints handle
// Must never: print anything else on stdout (it is the control channel).
#pragma once

#include <cstdint>
#include <string>

#include "bench/bench_options.hpp"

namespace ferry::bench {

struct peer_options {
  std::string role;
  uint64_t region_bytes = 0; // ucx: bytes to register and fill
  bool ucx_allocate = false; // ucx: UCP_MEM_MAP_ALLOCATE (else plain pages)
  bool am_echo = false;      // ucx: answer active-message pings (ucx_am_rtt)
  ferry_knobs knobs;         // ferry-owner
  bool rdma = false;         // ferry-owner: with the UCX transport
};

/// Runs a role to completion; returns the process exit code.
int run_peer(const peer_options& opts);

int run_tcp_peer(const peer_options& opts);
int run_ucx_peer(const peer_options& opts);
int run_caf_peer(const peer_options& opts);
int run_ferry_owner_peer(const peer_options& opts);

/// The control channel: one line out (flushed), one line in ("" at EOF).
void peer_say(const std::string& line);
bool peer_hear(std::string* line);

} // namespace ferry::bench
