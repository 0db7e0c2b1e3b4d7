// soak_run: one `ferry soak` run from start to verdict: starts the nodes,
// runs the traffic (opts.concurrency operations at once, each worker with
// its own seeded generator) and the fault plan side by side for the
// duration or the operation count, prints a progress line, then stops the
// traffic, waits for every node to be back at its idle baseline, judges
// the run and reports it (a table, or JSON with --json).
// Owns: the cluster, the ledger and the threads. Must never: end with a
// node process left running.
#pragma once

#include "soak/soak_options.hpp"

namespace ferry::soak {

/// The exit status: 0 nothing lost or leaked, 1 a violation (the report
/// names each and the command that replays the run), 2 it could not start.
int run_soak(soak_options opts);

} // namespace ferry::soak
