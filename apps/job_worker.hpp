// The job's worker: a named handler on its node's messenger. It gets a
// shard as plain bytes (the messenger fetched it if it came by handle),
// sorts it and replies the sorted bytes with their statistics (the
// messenger stages the reply if it is large). It runs detached (its own
// thread), so sorting never stalls the node's scheduler.
#pragma once

#include "actors/node_context.hpp"

namespace ferry::app {

/// The worker types a `ferry node` can spawn for the example job.
worker_registry job_workers();

} // namespace ferry::app
