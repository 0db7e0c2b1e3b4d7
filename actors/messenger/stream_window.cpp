#include "actors/messenger/stream_window.hpp"

#include <algorithm>

#include "protocol/errors.hpp"

namespace ferry::messenger {

stream_credit::stream_credit(uint32_t window)
  : window_(std::max<uint32_t>(1, window)), credit_(window_) {
}

void stream_credit::produced() {
  asking_ = false;
  if (credit_ > 0)
    --credit_;
}

void stream_credit::granted(uint32_t n) {
  credit_ = static_cast<uint32_t>(
    std::min<uint64_t>(window_, static_cast<uint64_t>(credit_) + n));
}

stream_inbox::stream_inbox(uint32_t window) : window_(std::max<uint32_t>(1, window)) {
}

caf::expected<uint64_t> stream_inbox::arrived() {
  if (slots_.size() >= window_)
    return make_error(errc::protocol_violation,
                      "the producer sent more than the " + std::to_string(window_)
                        + " items it was granted");
  slots_.emplace_back();
  return first_slot_ + slots_.size() - 1;
}

void stream_inbox::ready(uint64_t n, envelope item) {
  if (n < first_slot_ || n - first_slot_ >= slots_.size())
    return;
  auto& s = slots_[n - first_slot_];
  s.ready = true;
  s.item = std::move(item);
}

void stream_inbox::end(std::string error) {
  if (ended_)
    return;
  ended_ = true;
  end_error_ = std::move(error);
}

void stream_inbox::fail(std::string error) {
  if (!failure_)
    failure_ = std::move(error);
}

stream_inbox::take_result stream_inbox::take() {
  take_result out;
  if (failure_) {
    out.what = state::failed;
    out.error = *failure_;
    return out;
  }
  if (!slots_.empty() && slots_.front().ready) {
    out.what = state::item;
    out.item = std::move(slots_.front().item);
    slots_.pop_front();
    ++first_slot_;
    auto half = std::max<uint32_t>(1, window_ / 2);
    if (++taken_since_grant_ >= half) {
      out.grant = taken_since_grant_;
      taken_since_grant_ = 0;
    }
    return out;
  }
  if (slots_.empty() && ended_) {
    out.what = end_error_.empty() ? state::finished : state::failed;
    out.error = end_error_;
    return out;
  }
  return out; // waiting
}

} // namespace ferry::messenger
