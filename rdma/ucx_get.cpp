#include "rdma/ucx_get.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ferry {

namespace {

using clock_type = std::chrono::steady_clock;

// Progress alone (no sleeping) for this long after each wake-up: a GET over
// shared memory finishes within microseconds, far below a poll() round trip.
constexpr auto spin_window = std::chrono::microseconds(50);

// Longest single sleep while driving a request, so a lost wake-up (should UCX
// ever miss one) costs at most this much, never the whole timeout.
constexpr auto longest_sleep = std::chrono::milliseconds(100);

// Progresses `worker` until `req` is no longer in progress or `deadline`
// passes; returns the request's status (UCS_INPROGRESS on deadline).
ucs_status_t drive(ucp_worker_h worker, void* req, clock_type::time_point deadline) {
  auto spin_until = clock_type::now() + spin_window;
  for (;;) {
    ucs_status_t s = ucp_request_check_status(req);
    if (s != UCS_INPROGRESS)
      return s;
    if (ucp_worker_progress(worker) != 0)
      continue;
    const auto now = clock_type::now();
    if (now >= deadline)
      return UCS_INPROGRESS;
    if (now < spin_until)
      continue;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    auto woke = wait_for_worker_events(worker, std::min(left, longest_sleep));
    if (woke && *woke == ucx_wake::events)
      spin_until = clock_type::now() + spin_window;
  }
}

ucx_get_result make_result(ucx_get_state state, ucs_status_t status,
                           std::string error = {}) {
  ucx_get_result r;
  r.state = state;
  r.status = status;
  r.error = std::move(error);
  return r;
}

ucx_get_result finished(ucs_status_t s) {
  if (s == UCS_OK)
    return make_result(ucx_get_state::done, UCS_OK);
  return make_result(ucx_get_state::failed, s,
                     std::string("ucp_get_nbx: ") + ucs_status_string(s));
}

} // namespace

const char* to_string(ucx_get_state s) noexcept {
  switch (s) {
    case ucx_get_state::in_progress:
      return "in_progress";
    case ucx_get_state::done:
      return "done";
    case ucx_get_state::failed:
      return "failed";
    case ucx_get_state::timed_out:
      return "timed_out";
    case ucx_get_state::abandoned:
      return "abandoned";
  }
  return "unknown";
}

ucx_get_request::ucx_get_request(ucx_get_request&& other) noexcept
  : req_(std::exchange(other.req_, nullptr)),
    worker_(std::move(other.worker_)),
    key_(std::move(other.key_)) {}

ucx_get_request& ucx_get_request::operator=(ucx_get_request&& other) noexcept {
  if (this != &other) {
    release();
    req_ = std::exchange(other.req_, nullptr);
    worker_ = std::move(other.worker_);
    key_ = std::move(other.key_);
  }
  return *this;
}

ucx_get_request::~ucx_get_request() {
  release();
}

void ucx_get_request::release() noexcept {
  if (req_ != nullptr) {
    ucs_status_t s = ucp_request_check_status(req_);
    if (s == UCS_INPROGRESS) {
      ucp_request_cancel(worker_.get(), req_);
      s = drive(worker_.get(), req_, clock_type::now() + ucx_get_cancel_grace);
    }
    ucp_request_free(req_); // a running request is freed by UCX when it ends
    req_ = nullptr;
    if (s == UCS_INPROGRESS && key_) {
      // UCX may still read the key for this request (a queued send resumes
      // through it). Never destroy it; it goes with the worker's memory.
      key_->leak_on_release = true;
    }
  }
  key_.reset();
  worker_.reset();
}

ucx_get_result ucx_get_request::test() {
  if (req_ == nullptr)
    return make_result(ucx_get_state::done, UCS_OK);
  ucs_status_t s = ucp_request_check_status(req_);
  if (s == UCS_INPROGRESS)
    return make_result(ucx_get_state::in_progress, s);
  release();
  return finished(s);
}

ucx_get_result ucx_get_request::wait(std::chrono::milliseconds timeout) {
  if (req_ == nullptr)
    return make_result(ucx_get_state::done, UCS_OK);
  const auto limit = std::max(timeout, std::chrono::milliseconds(0));
  ucs_status_t s = drive(worker_.get(), req_, clock_type::now() + limit);
  if (s != UCS_INPROGRESS) {
    release();
    return finished(s);
  }
  // Timed out. Ask UCX to stop (a no-op for RMA on 1.13) and give a late
  // completion or the cancellation a bounded chance to land.
  ucp_request_cancel(worker_.get(), req_);
  s = drive(worker_.get(), req_, clock_type::now() + ucx_get_cancel_grace);
  const std::string after = "ucp_get_nbx: no completion within "
                            + std::to_string(limit.count()) + " ms";
  if (s == UCS_OK) { // the last bytes arrived during the grace
    release();
    return make_result(ucx_get_state::done, UCS_OK);
  }
  if (s != UCS_INPROGRESS) {
    release();
    return make_result(ucx_get_state::timed_out, s,
                       after + "; stopped (" + ucs_status_string(s) + ")");
  }
  return make_result(ucx_get_state::abandoned, UCS_INPROGRESS,
                     after + "; UCX cannot cancel it, destination still lent");
}

ucx_result<ucx_get_request> post_get(ucx_worker& worker, ucx_endpoint& ep,
                                     ucx_remote_key& key, std::uint64_t remote_addr,
                                     void* local_dest, std::size_t len) {
  constexpr const char* what = "post_get";
  if (worker.native() == nullptr)
    return make_ucx_error(what, UCS_ERR_INVALID_PARAM, "worker is empty");
  if (ep.native() == nullptr)
    return make_ucx_error(what, UCS_ERR_NOT_CONNECTED, "endpoint is closed");
  if (ep.worker() != worker.native())
    return make_ucx_error(what, UCS_ERR_INVALID_PARAM,
                          "endpoint belongs to another worker");
  if (ep.failure() != UCS_OK)
    return make_ucx_error(what, ep.failure(),
                          std::string("endpoint failed: ")
                              + ucs_status_string(ep.failure()));
  if (!key.belongs_to(ep))
    return make_ucx_error(what, UCS_ERR_INVALID_PARAM,
                          "remote key was not unpacked on this endpoint");
  if (len == 0)
    return ucx_get_request{};
  if (local_dest == nullptr)
    return make_ucx_error(what, UCS_ERR_INVALID_PARAM, "null destination");

  // No completion callback: the request is polled with
  // ucp_request_check_status, and a GET that completes inside the call
  // returns NULL.
  ucp_request_param_t params;
  std::memset(&params, 0, sizeof(params));
  void* r = ucp_get_nbx(ep.native(), local_dest, len, remote_addr, key.native(), &params);
  if (r == nullptr)
    return ucx_get_request{};
  if (UCS_PTR_IS_ERR(r))
    return make_ucx_error("ucp_get_nbx", UCS_PTR_STATUS(r));
  ucx_get_request out;
  out.req_ = r;
  out.worker_ = worker.shared_native();
  out.key_ = key.shared_native();
  return out;
}

ucx_get_result get(ucx_worker& worker, ucx_endpoint& ep, ucx_remote_key& key,
                   std::uint64_t remote_addr, void* local_dest, std::size_t len,
                   std::chrono::milliseconds timeout) {
  auto posted = post_get(worker, ep, key, remote_addr, local_dest, len);
  if (!posted)
    return make_result(ucx_get_state::failed, posted.status(), posted.error_message());
  ucx_get_result r = posted->wait(timeout);
  if (r.state == ucx_get_state::abandoned)
    r.unfinished = std::move(*posted);
  return r;
}

} // namespace ferry
