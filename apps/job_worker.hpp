// The job's worker: pulls a shard by handle, releases it, sorts it, stages
// the sorted shard on its own node and answers a shard_result. It runs
// detached (its own thread), so sorting never stalls the node's scheduler.
#pragma once

#include "actors/node_context.hpp"

namespace ferry::app {

/// The worker types a `ferry node` can spawn for the example job.
worker_registry job_workers();

} // namespace ferry::app
