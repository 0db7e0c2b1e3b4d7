#include "bench/ucx_am_echo.hpp"

#ifdef FERRY_BENCH_WITH_UCX

#include <cstring>

namespace ferry::bench {

namespace {

ucs_status_t take_message(void* arg, const void*, size_t, void* data, size_t length,
                          const ucp_am_recv_param_t* param) {
  auto* inbox = static_cast<am_inbox*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || length > am_max_message) {
    inbox->error = "an active message of " + std::to_string(length)
                   + " bytes (at most " + std::to_string(am_max_message) + " eager)";
    return UCS_OK;
  }
  std::memcpy(inbox->bytes, data, length);
  inbox->length = length;
  inbox->reply_ep =
    (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
  inbox->arrived = true;
  return UCS_OK; // the data was copied: UCX may reuse its buffer
}

} // namespace

std::string listen_am(ucp_worker_h worker, unsigned id, am_inbox* inbox) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB
                 | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.cb = take_message;
  p.arg = inbox;
  ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &p);
  if (st != UCS_OK)
    return std::string{"ucp_worker_set_am_recv_handler: "} + ucs_status_string(st);
  return {};
}

am_send post_am(ucp_ep_h ep, unsigned id, const void* data, std::size_t length,
                bool want_reply) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_EAGER | (want_reply ? UCP_AM_SEND_FLAG_REPLY : 0);
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, nullptr, 0, data, length, &p);
  am_send out;
  if (UCS_PTR_IS_ERR(r))
    out.error = std::string{"ucp_am_send_nbx: "} + ucs_status_string(UCS_PTR_STATUS(r));
  else
    out.request = r; // null: sent at once
  return out;
}

bool am_sent(am_send& send) {
  if (send.request == nullptr)
    return true;
  ucs_status_t st = ucp_request_check_status(send.request);
  if (st == UCS_INPROGRESS)
    return false;
  if (st != UCS_OK)
    send.error = std::string{"active message: "} + ucs_status_string(st);
  ucp_request_free(send.request);
  send.request = nullptr;
  return true;
}

} // namespace ferry::bench

#endif
