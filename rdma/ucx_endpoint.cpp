#include "rdma/ucx_endpoint.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "rdma/rkey_preparse.hpp"

namespace ferry {

struct ucx_endpoint::state {
  ucx_worker_ptr worker;
  ucp_ep_h ep = nullptr;
  ucx_error_mode mode = ucx_error_mode::none;
  std::chrono::milliseconds close_limit{1000};
  ucs_status_t failure = UCS_OK;
  void* flush = nullptr; // a start_flush() request not yet finished
};

namespace {

// THE framing gate in front of ucp_ep_rkey_unpack. Every packed key passes
// here first; UCX 1.13 reads the blob without a length, so only a blob whose
// framing UCX's own parse would consume exactly may go on.
ucx_status rkey_framing_ok(const std::uint8_t* data, std::size_t size) {
  const rkey_check verdict = check_packed_rkey(data, size);
  if (verdict == rkey_check::ok)
    return {};
  return make_ucx_error("unpack_rkey", UCS_ERR_INVALID_PARAM,
                        std::string("packed key refused before unpack: ")
                            + to_string(verdict) + " (" + std::to_string(size)
                            + " bytes)");
}

// Runs on the worker's thread, inside ucp_worker_progress (peer mode only).
void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* st = static_cast<ucx_endpoint::state*>(arg);
  if (st->failure == UCS_OK)
    st->failure = status;
}

} // namespace

ucx_rkey_holder::~ucx_rkey_holder() {
  if (key != nullptr && !leak_on_release)
    ucp_rkey_destroy(key);
  // `worker` is released after this body: the key went first.
}

ucx_result<ucx_endpoint> ucx_endpoint::connect(ucx_worker& worker, const void* address,
                                               std::size_t size,
                                               const ucx_endpoint_config& cfg) {
  if (worker.native() == nullptr)
    return make_ucx_error("ucx_endpoint::connect", UCS_ERR_INVALID_PARAM,
                          "worker is empty (moved from)");
  if (address == nullptr || size == 0 || size > max_ucx_worker_address_bytes)
    return make_ucx_error("ucx_endpoint::connect", UCS_ERR_INVALID_PARAM,
                          "worker address of " + std::to_string(size)
                              + " bytes refused (empty or over the bound)");
  auto st = std::make_shared<state>();
  st->worker = worker.shared_native();
  st->mode = cfg.error_mode;
  st->close_limit = cfg.close_limit;

  // UCX unpacks the address during ucp_ep_create. It reads an 8-byte aligned
  // private copy, so the caller may pass a view into any larger message.
  std::vector<std::uint64_t> copy((size + 7) / 8, 0);
  std::memcpy(copy.data(), address, size);

  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                      | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(copy.data());
  if (cfg.error_mode == ucx_error_mode::peer) {
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_handler.cb = on_endpoint_error;
    params.err_handler.arg = st.get();
  } else {
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  }
  ucs_status_t s = ucp_ep_create(st->worker.get(), &params, &st->ep);
  if (s != UCS_OK)
    return make_ucx_error("ucp_ep_create", s);
  return ucx_endpoint(std::move(st));
}

ucx_endpoint::ucx_endpoint(std::shared_ptr<state> st) : st_(std::move(st)) {}

ucx_endpoint::ucx_endpoint(ucx_endpoint&&) noexcept = default;

ucx_endpoint& ucx_endpoint::operator=(ucx_endpoint&& other) noexcept {
  if (this != &other) {
    close();
    st_ = std::move(other.st_);
  }
  return *this;
}

ucx_endpoint::~ucx_endpoint() {
  close();
}

ucp_ep_h ucx_endpoint::native() const noexcept {
  return st_ ? st_->ep : nullptr;
}

ucp_worker_h ucx_endpoint::worker() const noexcept {
  return st_ ? st_->worker.get() : nullptr;
}

ucx_error_mode ucx_endpoint::error_mode() const noexcept {
  return st_ ? st_->mode : ucx_error_mode::none;
}

ucs_status_t ucx_endpoint::failure() const noexcept {
  return st_ ? st_->failure : UCS_OK;
}

ucx_result<ucx_remote_key> ucx_endpoint::unpack_rkey(const std::uint8_t* data,
                                                     std::size_t size) {
  if (native() == nullptr)
    return make_ucx_error("unpack_rkey", UCS_ERR_NOT_CONNECTED, "endpoint is closed");
  if (auto framing = rkey_framing_ok(data, size); !framing)
    return framing.error();
  ucp_rkey_h raw = nullptr;
  ucs_status_t s = ucp_ep_rkey_unpack(st_->ep, data, &raw);
  if (s != UCS_OK)
    return make_ucx_error("ucp_ep_rkey_unpack", s);
  ucx_remote_key key;
  // The holder keeps the worker alive: the key lives in its memory pool.
  key.key_ = std::make_shared<ucx_rkey_holder>();
  key.key_->key = raw;
  key.key_->worker = st_->worker;
  key.owner_ = st_;
  return key;
}

bool ucx_remote_key::belongs_to(const ucx_endpoint& ep) const noexcept {
  if (!key_ || !ep.st_)
    return false;
  auto owner = owner_.lock();
  return owner != nullptr && owner.get() == static_cast<void*>(ep.st_.get());
}

ucx_status ucx_endpoint::close() {
  return close(st_ ? st_->close_limit : std::chrono::milliseconds(0));
}

bool ucx_endpoint::start_flush() {
  if (native() == nullptr || st_->flush != nullptr)
    return false;
  ucp_request_param_t params;
  std::memset(&params, 0, sizeof(params));
  void* req = ucp_ep_flush_nbx(st_->ep, &params);
  if (req == nullptr || UCS_PTR_IS_ERR(req))
    return req == nullptr; // finished at once, or refused
  st_->flush = req;
  return true;
}

bool ucx_endpoint::flush_pending() {
  if (!st_ || st_->flush == nullptr)
    return false;
  if (ucp_request_check_status(st_->flush) == UCS_INPROGRESS)
    return true;
  ucp_request_free(st_->flush);
  st_->flush = nullptr;
  return false;
}

ucx_status ucx_endpoint::close(std::chrono::milliseconds limit) {
  if (!st_ || st_->ep == nullptr)
    return {};
  if (st_->flush != nullptr) { // UCX finishes it (or drops it) with the close
    ucp_request_free(st_->flush);
    st_->flush = nullptr;
  }
  ucp_worker_h w = st_->worker.get();
  ucp_request_param_t params;
  std::memset(&params, 0, sizeof(params));
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // UCX 1.13 refuses FORCE unless the endpoint is in peer mode.
  params.flags = st_->mode == ucx_error_mode::peer ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  void* req = ucp_ep_close_nbx(st_->ep, &params);
  st_->ep = nullptr;
  if (req == nullptr)
    return {};
  if (UCS_PTR_IS_ERR(req))
    return make_ucx_error("ucp_ep_close_nbx", UCS_PTR_STATUS(req));

  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::max(limit, std::chrono::milliseconds(0));
  ucs_status_t s = ucp_request_check_status(req);
  while (s == UCS_INPROGRESS) {
    if (ucp_worker_progress(w) == 0) {
      const auto now = clock::now();
      if (now >= deadline)
        break;
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
      (void) wait_for_worker_events(w, std::min(left, std::chrono::milliseconds(50)));
    }
    s = ucp_request_check_status(req);
  }
  // Released either way; an unfinished close completes inside UCX (at the
  // latest when the worker is destroyed).
  ucp_request_free(req);
  if (s == UCS_INPROGRESS)
    return make_ucx_error("ucp_ep_close_nbx", UCS_ERR_TIMED_OUT,
                          "close not finished within " + std::to_string(limit.count())
                              + " ms; left to UCX");
  if (s != UCS_OK)
    return make_ucx_error("ucp_ep_close_nbx", s);
  return {};
}

} // namespace ferry
