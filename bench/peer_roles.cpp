#include <cstdio>
#include <iostream>

#include "bench/peer_roles.hpp"
#include "runtime/logging.hpp"

namespace ferry::bench {

void peer_say(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

bool peer_hear(std::string* line) {
  return static_cast<bool>(std::getline(std::cin, *line));
}

int run_peer(const peer_options& opts) {
  // stdout is the control channel: every log line goes to stderr.
  init_logging("warn", "bench-peer");
  if (opts.role == "tcp")
    return run_tcp_peer(opts);
  if (opts.role == "ucx")
    return run_ucx_peer(opts);
  if (opts.role == "caf")
    return run_caf_peer(opts);
  if (opts.role == "ferry-owner")
    return run_ferry_owner_peer(opts);
  peer_say("error unknown role '" + opts.role + "'");
  return 2;
}

} // namespace ferry::bench
