// soak_node: one node of a soak run, in its own process (`ferry soak-node`,
// hidden; started by `ferry soak`). It runs a ferry::node with every `ferry
// node` option, binds the soak's messenger handlers, and serves the driver
// over its stdin/stdout: one command line in, one answer line out, both
// led by the operation's id, many operations at once (each on its own
// thread). See node_commands.hpp for the commands.
// SIGTERM or SIGINT stops the node with its one-deadline shutdown and exits
// 0; the end of stdin does the same.
// Owns: the node. Must never: print anything on stdout but "ready ..." and
// answers (logs go to stderr).
#pragma once

#include <cstdint>

#include "runtime/node_config.hpp"

namespace ferry::soak {

/// Faults a test plants in a node to show the soak's checks can fail.
struct node_test_hooks {
  bool corrupt_gets = false; // flips a byte of every payload it gets
  bool leak_slot = false;    // stages one payload more than asked, once
};

/// Runs the node until a stop signal or the end of stdin; the exit status.
int run_soak_node(const node_config& cfg, const node_test_hooks& hooks);

} // namespace ferry::soak
