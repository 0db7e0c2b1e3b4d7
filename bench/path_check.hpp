// path_check: proof of which path a ferry get took, from a node's own
// ferry_rendezvous_rdma_path_total{path, reason} counters (the consumer
// counts rdma/ok once per completed GET and chunked/<reason> at each
// refused offer or fallback). An RDMA row snapshots its consumer node's
// counters before a run and checks them after the clock stops, so a get that
// quietly fell back to chunks fails the point instead of being reported as
// an RDMA number.
// Plain reads of the node's registry; no actors, no clocks.
#pragma once

#include <string>
#include <vector>

#include "actors/rendezvous/path_metrics.hpp"

namespace ferry {
class node;
}

namespace ferry::bench {

/// Every (path, reason) counter of one node.
struct path_counts {
  std::vector<double> rdma;    // indexed by path_reason
  std::vector<double> chunked; // indexed by path_reason
};

path_counts read_paths(node& n);

/// Empty when rdma/ok rose by exactly `gets` between the snapshots;
/// else what happened instead (the chunked reasons that rose, if any).
std::string expect_rdma(const path_counts& before, const path_counts& after,
                        int gets = 1);

/// Empty when chunked/`reason` rose by exactly `gets` and rdma/ok did not
/// rise; else what happened instead.
std::string expect_chunked(const path_counts& before, const path_counts& after,
                           path_reason reason, int gets = 1);

/// The chunked/<reason> counters that rose ("budget, pool_exhausted"), or "".
std::string chunked_reasons(const path_counts& before, const path_counts& after);

} // namespace ferry::bench
