// run_node: the `ferry node` program, for a user's own node binary. A main
// that calls run_node gets every `ferry node` option and behaviour (the
// node options, --ready-file, --config, logging, a clean stop on SIGINT or
// SIGTERM) and serves the user's worker types, which gateways spawn on
// request like the stock ones. The deploy scripts run such a binary in
// place of `ferry` (FERRY_BIN=/path/to/it deploy/local/cluster.sh start).
//
//   int main(int argc, char** argv) {
//     ferry::worker_registry workers;
//     workers["my.worker"] = make_my_worker; // see actors/node_context.hpp
//     return ferry::run_node(argc, argv, std::move(workers));
//   }
#pragma once

#include <functional>
#include <string>

#include "actors/node_context.hpp"
#include "runtime/node.hpp"
#include "runtime/node_config.hpp"

namespace ferry {

/// Runs a node with `ferry node`'s command line until SIGINT or SIGTERM (a
/// leading "node" argument is accepted, as the deploy scripts pass it).
/// Returns the process's exit status.
int run_node(int argc, char** argv, worker_registry workers = {},
             type_registrar extra_types = {});

/// Called once the node started, before it is announced: binds handlers,
/// say; false stops the program (exit status 1).
using on_node_started = std::function<bool(node&)>;

/// The serving part: starts a node with `cfg`, runs `started`, prints where
/// it listens, writes `ready_file` (PORT METRICS_PORT WORKER_ID) when set,
/// and stops it cleanly on SIGINT or SIGTERM. Returns the exit status (1:
/// it did not start).
int serve_node(const node_config& cfg, const std::string& ready_file,
               worker_registry workers = {}, type_registrar extra_types = {},
               const on_node_started& started = {});

/// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread
/// it starts after; call before any thread starts. The stop signal then
/// comes only to wait_for_stop_signal.
void block_stop_signals();

/// Waits for SIGINT or SIGTERM (blocked by block_stop_signals); answers it.
int wait_for_stop_signal();

} // namespace ferry
