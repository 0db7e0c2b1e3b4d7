#include "protocol/staging_headers.hpp"

#include <algorithm>
#include <charconv>

#include "protocol/rv_messages.hpp"

namespace ferry::messenger {

bool stages(uint64_t payload_bytes, uint64_t threshold) {
  return payload_bytes > threshold;
}

uint64_t budget_ms(std::chrono::nanoseconds left) {
  if (left.count() <= 0)
    return 0;
  auto ns = static_cast<uint64_t>(left.count());
  return ns / 1000000 + (ns % 1000000 != 0 ? 1 : 0);
}

void write_staged(headers& h, const data_handle& handle,
                  std::optional<std::chrono::nanoseconds> left) {
  h[handle_header] = to_string(handle);
  if (left)
    h[budget_header] = std::to_string(budget_ms(*left));
  else
    h.erase(budget_header);
}

staged_ref take_staged(headers& h) {
  staged_ref out;
  std::optional<std::string> handle_text;
  std::optional<std::string> budget_text;
  if (auto i = h.find(handle_header); i != h.end()) {
    handle_text = std::move(i->second);
    h.erase(i);
  }
  if (auto i = h.find(budget_header); i != h.end()) {
    budget_text = std::move(i->second);
    h.erase(i);
  }
  if (!handle_text)
    return out; // inline: a lone budget means nothing
  out.handle = parse_data_handle(*handle_text);
  if (!out.handle) {
    out.error = "the _rv header is not a data handle";
    return out;
  }
  if (budget_text) {
    uint64_t ms = 0;
    const auto* first = budget_text->data();
    const auto* last = first + budget_text->size();
    auto [end, ec] = std::from_chars(first, last, ms);
    if (ec == std::errc{} && end == last)
      out.budget = std::chrono::milliseconds{std::min(ms, max_wire_duration_ms)};
    else if (ec == std::errc::result_out_of_range)
      out.budget = std::chrono::milliseconds{max_wire_duration_ms};
  }
  return out;
}

std::optional<fetch_limit> limit_for(message_kind kind,
                                     std::optional<std::chrono::milliseconds> budget,
                                     std::chrono::milliseconds staged_fetch_timeout) {
  if (kind == message_kind::stream_item) {
    if (budget)
      return fetch_limit{*budget, fetch_bound::caller_budget};
    return std::nullopt;
  }
  if (budget && *budget <= staged_fetch_timeout)
    return fetch_limit{*budget, fetch_bound::caller_budget};
  return fetch_limit{staged_fetch_timeout, fetch_bound::receiver_timeout};
}

expiry_action on_expiry(fetch_bound by, message_kind kind) {
  if (by == fetch_bound::receiver_timeout && kind == message_kind::unary)
    return expiry_action::reply_fetch_timed_out;
  return expiry_action::drop_silently;
}

std::string over_limit(uint64_t stated_bytes, uint64_t staged_payload_max) {
  if (staged_payload_max == 0 || stated_bytes <= staged_payload_max)
    return {};
  return "the staged payload is " + std::to_string(stated_bytes)
         + " bytes, over this node's staged_payload_max of "
         + std::to_string(staged_payload_max) + " bytes";
}

} // namespace ferry::messenger
