#include "rdma/ucx_env.hpp"

#include <cstdlib>

#include <ucm/api/ucm.h>

namespace ferry {

void apply_ucx_defaults() {
  // overwrite = 0: a value the user exported wins.
  ::setenv("UCX_RCACHE_ENABLE", "n", 0);
  if (std::getenv("UCX_MEM_EVENTS") == nullptr) {
    // UCM read its options when libucs was loaded; edit the loaded copy.
    // (ucm_global_opts is the only way to read them back in UCX 1.13.)
    ucm_global_config_t opts = ucm_global_opts;
    if (opts.enable_events) {
      opts.enable_events = 0;
      ucm_set_global_opts(&opts);
    }
  }
}

} // namespace ferry
