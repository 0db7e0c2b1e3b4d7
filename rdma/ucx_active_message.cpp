#include "rdma/ucx_active_message.hpp"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

// A buffer kept for good (held past its inbox) is a leak by design, logged
// at close: LeakSanitizer is told so, so that it reports only real ones.
#if defined(__SANITIZE_ADDRESS__)
#define FERRY_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define FERRY_LEAK_CHECKED 1
#endif
#endif
#ifdef FERRY_LEAK_CHECKED
#include <sanitizer/lsan_interface.h>
#endif

namespace ferry {

namespace {

ucs_status_t take_message(void* arg, const void*, size_t, void* data, size_t length,
                          const ucp_am_recv_param_t* param) {
  try {
    return static_cast<ucx_am_inbox*>(arg)->on_message(data, length, param);
  } catch (const std::exception& e) { // never through UCX's C frames
    spdlog::warn("UCX active message of {} bytes dropped: {}", length, e.what());
    return (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 ? UCS_ERR_NO_MEMORY : UCS_OK;
  }
}

/// The bytes of one send, kept until UCX completes it.
struct send_holder {
  std::vector<uint8_t> bytes; // the whole message, or its head
  am_tail tail;
  ucp_dt_iov_t parts[2]{};    // head and tail, when there is a tail
  std::shared_ptr<ucx_am_send_stats> stats;
  uint64_t tag = 0;
  uint64_t to = 0;
};

/// A send posted (+1) or completed (-1): the count and when it changed.
void count_in_flight(ucx_am_send_stats& stats, int delta) {
  stats.in_flight += static_cast<uint64_t>(delta);
  stats.in_flight_changed = std::chrono::steady_clock::now();
}

void send_done(void* request, ucs_status_t status, void* user_data) {
  auto* h = static_cast<send_holder*>(user_data);
  if (h->stats)
    count_in_flight(*h->stats, -1);
  if (status != UCS_OK && h->stats) {
    ++h->stats->failed;
    if (h->tag != 0 || h->to != 0)
      h->stats->failed_sends.push_back({h->tag, h->to});
  }
  delete h;
  ucp_request_free(request);
}

ucp_ep_h reply_ep_of(const ucp_am_recv_param_t* param) {
  return (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep
                                                                    : nullptr;
}

} // namespace

/// Shared by an inbox and every message it handed out in UCX's buffer.
struct ucx_am_holds {
  struct let_go {
    void* desc;
    size_t bytes;
  };

  explicit ucx_am_holds(ucx_worker_ptr w) : worker(std::move(w)) {}

  std::mutex mutex;
  std::condition_variable holder_let_go;
  std::vector<let_go> to_give_back; // let go, for the worker's thread
  size_t held = 0;                  // handed out, not given back to UCX yet
  size_t held_bytes = 0;
  bool closed = false;              // the inbox is gone: nothing is given back
  // The buffers live in the worker's memory pools or its transports' ones:
  // it stays alive while any is held.
  ucx_worker_ptr worker;
};

namespace {

/// One message's UCX buffer, while its holders hold it.
class held_buffer {
public:
  held_buffer(std::shared_ptr<ucx_am_holds> holds, void* desc, size_t bytes)
    : holds_(std::move(holds)), desc_(desc), bytes_(bytes) {}
  held_buffer(const held_buffer&) = delete;
  held_buffer& operator=(const held_buffer&) = delete;

  ~held_buffer() {
    {
      std::lock_guard<std::mutex> lock{holds_->mutex};
      if (holds_->closed) { // kept for good: UCX is not called off its thread
        --holds_->held;
        holds_->held_bytes -= bytes_;
#ifdef FERRY_LEAK_CHECKED
        __lsan_ignore_object(desc_);
#endif
        return;
      }
      holds_->to_give_back.push_back({desc_, bytes_});
      holds_->holder_let_go.notify_all();
    }
    // The worker's thread gives it back at its next next(): woken for it,
    // so that a sleeping engine does not keep the buffer (the one UCX call
    // any thread may make).
    ucp_worker_signal(holds_->worker.get());
  }

private:
  std::shared_ptr<ucx_am_holds> holds_;
  void* desc_;
  size_t bytes_;
};

} // namespace

ucx_am_inbox::ucx_am_inbox(ucx_worker_ptr worker, unsigned id, ucx_am_limits limits)
  : worker_(std::move(worker)), id_(id), limits_(limits),
    holds_(std::make_shared<ucx_am_holds>(worker_)) {}

ucx_result<std::unique_ptr<ucx_am_inbox>>
ucx_am_inbox::listen(const ucx_worker& worker, unsigned id, ucx_am_limits limits) {
  std::unique_ptr<ucx_am_inbox> inbox{new ucx_am_inbox(worker.shared_native(), id, limits)};
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB
                 | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.cb = take_message;
  p.arg = inbox.get();
  ucs_status_t st = ucp_worker_set_am_recv_handler(worker.native(), &p);
  if (st != UCS_OK)
    return make_ucx_error("ucp_worker_set_am_recv_handler", st);
  return inbox;
}

ucx_am_inbox::~ucx_am_inbox() {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
  p.id = id_;
  p.cb = nullptr;
  ucp_worker_set_am_recv_handler(worker_.get(), &p);
  ready_.clear(); // their held buffers are let go, given back below
  for (auto& r : announced_)
    ucp_am_data_release(worker_.get(), r->desc); // never received: UCX drops it
  announced_.clear();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{1};
  while (!receiving_.empty() && std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker_.get());
    collect_receives();
  }
  for (auto& r : receiving_) {
    spdlog::warn("UCX active message of {} bytes still being received at close: its "
                 "buffer is kept",
                 r->bytes.size());
    r.release(); // UCX may still write it and call back into it
  }
  close_holds();
}

size_t ucx_am_inbox::held_now() const {
  std::lock_guard<std::mutex> lock{holds_->mutex};
  return holds_->held;
}

size_t ucx_am_inbox::held_bytes_now() const {
  std::lock_guard<std::mutex> lock{holds_->mutex};
  return holds_->held_bytes;
}

void ucx_am_inbox::give_back_let_go() {
  std::vector<ucx_am_holds::let_go> let_go;
  {
    std::lock_guard<std::mutex> lock{holds_->mutex};
    if (holds_->to_give_back.empty())
      return;
    let_go.swap(holds_->to_give_back);
  }
  size_t bytes = 0;
  for (const auto& b : let_go) { // UCX called outside the lock
    ucp_am_data_release(worker_.get(), b.desc);
    bytes += b.bytes;
  }
  std::lock_guard<std::mutex> lock{holds_->mutex};
  holds_->held -= let_go.size();
  holds_->held_bytes -= bytes;
}

void ucx_am_inbox::close_holds() {
  auto until = std::chrono::steady_clock::now() + limits_.hold_wait;
  give_back_let_go();
  std::unique_lock<std::mutex> lock{holds_->mutex};
  while (holds_->held > 0
         && holds_->holder_let_go.wait_until(lock, until,
                                             [&] { return !holds_->to_give_back.empty(); })) {
    lock.unlock();
    give_back_let_go();
    lock.lock();
  }
  if (holds_->held > 0)
    spdlog::warn("{} UCX active message buffers ({} bytes) still held at close: they are "
                 "kept, and the worker with them, until their holders let go",
                 holds_->held, holds_->held_bytes);
  holds_->closed = true;
}

bool ucx_am_inbox::can_hold(size_t length, const ucp_am_recv_param_t* param) const {
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) == 0 || length < limits_.hold_from)
    return false;
  std::lock_guard<std::mutex> lock{holds_->mutex};
  return holds_->held_bytes <= limits_.max_held_bytes
         && length <= limits_.max_held_bytes - holds_->held_bytes;
}

bool ucx_am_inbox::room_for(size_t length) const noexcept {
  return waiting() < limits_.max_queued && queued_bytes_ <= limits_.max_queued_bytes
         && length <= limits_.max_queued_bytes - queued_bytes_;
}

ucs_status_t ucx_am_inbox::on_message(const void* data, size_t length,
                                      const ucp_am_recv_param_t* param) {
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (length > limits_.max_message) {
    ++stats_.too_large;
    return rndv ? UCS_ERR_MESSAGE_TRUNCATED : UCS_OK; // dropped either way
  }
  if (!room_for(length)) {
    ++stats_.queue_full;
    return rndv ? UCS_ERR_NO_RESOURCE : UCS_OK;
  }
  // What may throw (bad_alloc: take_message drops the message) comes
  // before anything is counted or kept.
  const auto* p = static_cast<const uint8_t*>(data);
  if (!rndv && can_hold(length, param)) { // UCX's buffer, kept until let go
    ready_.emplace_back();
    std::shared_ptr<held_buffer> hold;
    try {
      hold = std::make_shared<held_buffer>(holds_, const_cast<void*>(data), length);
    } catch (...) {
      ready_.pop_back();
      throw;
    }
    {
      std::lock_guard<std::mutex> lock{holds_->mutex};
      ++holds_->held;
      holds_->held_bytes += length;
    }
    ready_.back() = ucx_am_message{received_bytes{p, length, std::move(hold)},
                                   reply_ep_of(param)};
    queued_bytes_ += length;
    return UCS_INPROGRESS;
  }
  if (!rndv) { // the bytes are valid during this call only: copied out
    ready_.push_back(ucx_am_message{std::vector<uint8_t>(p, p + length), reply_ep_of(param)});
    queued_bytes_ += length;
    return UCS_OK;
  }
  // Rendezvous: the descriptor stays valid; its receive starts in next(),
  // outside this callback.
  auto r = std::make_unique<rendezvous>();
  r->desc = const_cast<void*>(data);
  r->bytes.resize(length);
  r->reply_ep = reply_ep_of(param);
  announced_.push_back(std::move(r));
  queued_bytes_ += length;
  return UCS_INPROGRESS;
}

void ucx_am_inbox::on_received(void*, ucs_status_t status, size_t, void* user_data) {
  auto* r = static_cast<rendezvous*>(user_data);
  r->status = status;
  r->done = true;
}

void ucx_am_inbox::start_receives() {
  while (!announced_.empty()) {
    auto r = std::move(announced_.front());
    announced_.pop_front();
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.recv_am = on_received;
    p.user_data = r.get();
    ucs_status_ptr_t req =
      ucp_am_recv_data_nbx(worker_.get(), r->desc, r->bytes.data(), r->bytes.size(), &p);
    r->desc = nullptr; // UCX owns it now, whatever the outcome
    if (UCS_PTR_IS_ERR(req)) {
      r->done = true;
      r->status = UCS_PTR_STATUS(req);
    } else if (req == nullptr) {
      r->done = true; // received at once
    } else {
      r->request = req;
    }
    receiving_.push_back(std::move(r));
  }
}

void ucx_am_inbox::collect_receives() {
  for (auto i = receiving_.begin(); i != receiving_.end();) {
    auto& r = **i;
    if (!r.done) {
      ++i;
      continue;
    }
    if (r.request != nullptr)
      ucp_request_free(r.request);
    if (r.status == UCS_OK) {
      ++stats_.rendezvous;
      ready_.push_back(ucx_am_message{std::move(r.bytes), r.reply_ep});
    } else {
      ++stats_.failed;
      queued_bytes_ -= r.bytes.size();
      spdlog::debug("UCX active message receive failed: {}", ucs_status_string(r.status));
    }
    i = receiving_.erase(i);
  }
}

std::optional<ucx_am_message> ucx_am_inbox::next() {
  give_back_let_go();
  start_receives();
  collect_receives();
  if (ready_.empty())
    return std::nullopt;
  auto m = std::move(ready_.front());
  ready_.pop_front();
  queued_bytes_ -= m.bytes.size();
  ++stats_.received;
  if (m.bytes.held())
    ++stats_.held;
  return m;
}

ucx_status post_am(ucp_ep_h ep, unsigned id, std::vector<uint8_t> bytes, bool want_reply,
                   const std::shared_ptr<ucx_am_send_stats>& stats, uint64_t tag,
                   uint64_t to, am_protocol protocol) {
  return post_am(ep, id, std::move(bytes), am_tail{}, want_reply, stats, tag, to, protocol);
}

ucx_status post_am(ucp_ep_h ep, unsigned id, std::vector<uint8_t> head, am_tail tail,
                   bool want_reply, const std::shared_ptr<ucx_am_send_stats>& stats,
                   uint64_t tag, uint64_t to, am_protocol protocol) {
  auto* h = new send_holder{std::move(head), std::move(tail), {}, stats, tag, to};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK
                   | UCP_OP_ATTR_FIELD_USER_DATA;
  p.flags = (want_reply ? UCP_AM_SEND_FLAG_REPLY : 0)
            | (protocol == am_protocol::eager_only ? UCP_AM_SEND_FLAG_EAGER : 0);
  p.cb.send = send_done;
  p.user_data = h;
  const void* buffer = h->bytes.data();
  size_t count = h->bytes.size();
  if (!h->tail.bytes.empty()) { // UCX reads the parts where they are
    h->parts[0] = {h->bytes.data(), h->bytes.size()};
    h->parts[1] = {const_cast<char*>(h->tail.bytes.data()), h->tail.bytes.size()};
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_iov();
    buffer = h->parts;
    count = 2;
  }
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, nullptr, 0, buffer, count, &p);
  if (stats)
    ++stats->posted;
  if (UCS_PTR_IS_ERR(r)) {
    delete h;
    if (stats)
      ++stats->failed;
    return make_ucx_error("ucp_am_send_nbx", UCS_PTR_STATUS(r));
  }
  if (r == nullptr)
    delete h; // sent at once: the callback is not called
  else if (stats)
    count_in_flight(*stats, +1);
  return {};
}

} // namespace ferry
