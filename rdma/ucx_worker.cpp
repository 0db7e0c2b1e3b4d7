#include "rdma/ucx_worker.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <poll.h>

namespace ferry {

ucx_result<ucx_worker> ucx_worker::create(const ucx_context& context) {
  if (context.native() == nullptr)
    return make_ucx_error("ucx_worker::create", UCS_ERR_INVALID_PARAM,
                          "context is empty (moved from)");
  ucp_worker_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h raw = nullptr;
  ucs_status_t st = ucp_worker_create(context.native(), &params, &raw);
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_create", st);

  ucx_worker out;
  // The deleter keeps the context alive until the worker is gone.
  out.worker_ = ucx_worker_ptr(raw, [ctx = context.shared_native()](ucp_worker_h w) {
    ucp_worker_destroy(w);
  });

  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(raw, &addr, &addr_len);
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_get_address", st);
  const char* bytes = reinterpret_cast<const char*>(addr);
  out.address_.assign(bytes, bytes + addr_len);
  ucp_worker_release_address(raw, addr);

  int fd = -1;
  st = ucp_worker_get_efd(raw, &fd); // fails when the context lacks WAKEUP
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_get_efd", st);
  return out;
}

unsigned ucx_worker::progress() {
  if (!worker_)
    return 0;
  return ucp_worker_progress(worker_.get());
}

ucx_result<ucx_wake> ucx_worker::wait_for_events(std::chrono::milliseconds max) {
  if (!worker_)
    return make_ucx_error("wait_for_events", UCS_ERR_INVALID_PARAM,
                          "worker is empty (moved from)");
  return wait_for_worker_events(worker_.get(), max);
}

ucx_result<ucx_wake> wait_for_worker_events(ucp_worker_h worker,
                                            std::chrono::milliseconds max) {
  if (worker == nullptr)
    return make_ucx_error("wait_for_events", UCS_ERR_INVALID_PARAM, "no worker");
  int event_fd = -1;
  ucs_status_t st = ucp_worker_get_efd(worker, &event_fd);
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_get_efd", st);
  // Work already queued: report it instead of sleeping on top of it.
  if (ucp_worker_progress(worker) != 0)
    return ucx_wake::events;
  // Arm: from here on, any new event (or signal) makes the fd readable.
  // BUSY means events arrived between the progress and the arm, or a
  // signal() was pending (arm consumed it), or a transport holds work it
  // cannot move yet (shared memory: sends waiting for the peer to read):
  // the last one, when progress moves nothing, is reported as `stalled`.
  st = ucp_worker_arm(worker);
  if (st == UCS_ERR_BUSY)
    return ucp_worker_progress(worker) != 0 ? ucx_wake::events : ucx_wake::stalled;
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_arm", st);

  using clock = std::chrono::steady_clock;
  const auto limit = std::max(max, std::chrono::milliseconds(0));
  const auto deadline = clock::now() + limit;
  for (;;) {
    // Rounded up, so a sub-millisecond remainder sleeps instead of spinning.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() < 0)
      left = std::chrono::milliseconds(0);
    const int ms = static_cast<int>(std::min<long long>(left.count(), INT_MAX));
    pollfd pfd;
    pfd.fd = event_fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    int n = ::poll(&pfd, 1, ms);
    if (n > 0) {
      ucp_worker_progress(worker);
      return ucx_wake::events;
    }
    if (n == 0) {
      if (clock::now() < deadline)
        continue; // poll's clock woke a little early
      return ucx_wake::timed_out;
    }
    if (errno == EINTR)
      continue;
    return make_ucx_error("wait_for_events", UCS_ERR_IO_ERROR, std::strerror(errno));
  }
}

ucx_status ucx_worker::signal() const {
  ucp_worker_h w = worker_.get();
  if (w == nullptr)
    return make_ucx_error("ucx_worker::signal", UCS_ERR_INVALID_PARAM,
                          "worker is empty (moved from)");
  ucs_status_t st = ucp_worker_signal(w);
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_signal", st);
  return {};
}

} // namespace ferry
