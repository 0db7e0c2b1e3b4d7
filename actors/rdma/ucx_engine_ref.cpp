#include "actors/rdma/ucx_engine.hpp"

#ifdef FERRY_WITH_UCX
#  include <ucp/api/ucp.h>
#endif

namespace ferry {

void ucx_engine_ref::wake() const {
#ifdef FERRY_WITH_UCX
  if (worker_)
    ucp_worker_signal(worker_.get());
#endif
}

} // namespace ferry
