#include "rdma/ucx_env.hpp"

#include <cstdlib>

namespace ferry {

void apply_ucx_defaults() {
  // overwrite = 0: a value the user exported wins.
  ::setenv("UCX_RCACHE_ENABLE", "n", 0);
  ::setenv("UCX_MEM_EVENTS", "n", 0);
}

} // namespace ferry
