// node_commands: what a soak node does for each command of the driver
// (soak_node.hpp). A command is "<id> <verb> <args...>"; its answer is
// "<id> ok <values...>", "<id> fail <why>" (ferry answered an error: the
// operation failed cleanly) or "<id> mismatch <why>" (bytes that are not
// the bytes staged: a violation).
//   connect HOST:PORT                    -> ok WORKER_ID
//   stage SIZE SEED plain|pinned [TTL_MS] -> ok HANDLE CHECKSUM
//   get HANDLE SIZE CHECKSUM copy|pinned -> ok    (verified, then released)
//   giveup HANDLE SIZE CHECKSUM MS       -> ok done|gaveup (its caller goes
//                                           after MS: the get is abandoned)
//   free HANDLE                          -> ok freed|gone (an owner drops
//                                           what nobody released)
//   call WORKER SIZE SEED                -> ok    (soak.echo, verified)
//   stream WORKER ITEMS BYTES SEED       -> ok    (soak.items, verified)
//   stat                                 -> ok {JSON}: what the node holds
// Owns: nothing (the node is the caller's). Must never: block without the
// node's own bounds.
#pragma once

#include <string>

#include "soak/soak_node.hpp"

namespace ferry {
class node;
}

namespace ferry::soak {

/// Binds soak.echo and soak.items on `n`; empty or why not.
std::string bind_soak_handlers(node& n);

/// From now on, commands make no further call on their node: each answers
/// "fail the node is stopping" at its next step. Before node::stop(), whose
/// end takes the node's handles away from threads still running commands.
void refuse_node_calls();

/// Runs one command (without its id) on `n`; the answer (without the id).
std::string run_node_command(node& n, const std::string& command,
                             const node_test_hooks& hooks);

} // namespace ferry::soak
