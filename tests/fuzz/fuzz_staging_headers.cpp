// libFuzzer target: the messenger's staging rules (protocol/staging_headers)
// over a peer's headers. The input is 33 bytes of parameters (the time left
// on a local call, the receiver's staged_fetch_timeout, a stated payload
// size and the receiver's staged_payload_max, a message kind), then the
// headers as they arrive in an envelope. Checked:
// - take_staged takes out both staging headers and nothing else; a budget
//   comes only with a handle, never past max_wire_duration_ms; a malformed
//   `_rv` is an error, never a handle;
// - a handle taken, written again by a staged send, comes back the same,
//   with the send's own budget (whole milliseconds, rounded up);
// - limit_for never waits longer than the caller's budget or (but for a
//   stream item) the receiver's timeout, and on_expiry replies only to a
//   unary caller that the receiver's timeout ended;
// - over_limit refuses exactly the sizes over a non-zero limit.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <caf/binary_deserializer.hpp>

#include "protocol/rv_messages.hpp"
#include "protocol/staging_headers.hpp"

namespace {

using namespace ferry::messenger;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

constexpr size_t params_size = 33;

uint64_t read_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | p[i];
  return v;
}

void check_take(const headers& arrived, const headers& left, const staged_ref& ref) {
  if (left.count(handle_header) != 0 || left.count(budget_header) != 0)
    std::abort(); // a staging header would reach the handler
  headers expected = arrived;
  expected.erase(handle_header);
  expected.erase(budget_header);
  if (left != expected)
    std::abort(); // another header was touched
  const bool had_handle = arrived.count(handle_header) != 0;
  if (!had_handle && (ref.handle || ref.budget || !ref.error.empty()))
    std::abort();
  if (had_handle && ref.handle.has_value() == !ref.error.empty())
    std::abort(); // exactly one of a handle and an error
  if (ref.budget && !ref.handle)
    std::abort();
  if (ref.budget && (ref.budget->count() < 0
                     || static_cast<uint64_t>(ref.budget->count())
                          > ferry::max_wire_duration_ms))
    std::abort();
  if (ref.handle && ferry::parse_data_handle(ferry::to_string(*ref.handle)) != ref.handle)
    std::abort();
}

void check_rewrite(headers h, const ferry::data_handle& handle, int64_t left_ns,
                   bool has_timeout) {
  std::optional<nanoseconds> left;
  if (has_timeout)
    left = nanoseconds{left_ns};
  write_staged(h, handle, left);
  auto again = take_staged(h);
  if (again.handle != handle || !again.error.empty())
    std::abort();
  if (!has_timeout) {
    if (again.budget)
      std::abort(); // a forwarded budget survived a send with none
    return;
  }
  const uint64_t ms = budget_ms(*left);
  if (left_ns <= 0 ? ms != 0
                   : (ms * 1000000 < static_cast<uint64_t>(left_ns)
                      || (ms - 1) * 1000000 >= static_cast<uint64_t>(left_ns)))
    std::abort(); // not whole milliseconds rounded up
  const uint64_t expected = std::min(ms, ferry::max_wire_duration_ms);
  if (!again.budget || static_cast<uint64_t>(again.budget->count()) != expected)
    std::abort();
}

void check_limit(message_kind kind, std::optional<milliseconds> budget,
                 milliseconds timeout) {
  auto limit = limit_for(kind, budget, timeout);
  if (!limit) {
    if (kind != message_kind::stream_item || budget)
      std::abort(); // only a stream item without a budget waits unbounded here
    return;
  }
  if (budget && limit->after > *budget)
    std::abort();
  if (kind != message_kind::stream_item && limit->after > timeout)
    std::abort();
  if (limit->by == fetch_bound::caller_budget && (!budget || limit->after != *budget))
    std::abort();
  const bool replies = on_expiry(limit->by, kind) == expiry_action::reply_fetch_timed_out;
  if (replies != (limit->by == fetch_bound::receiver_timeout && kind == message_kind::unary))
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < params_size)
    return 0;
  const auto left_ns = static_cast<int64_t>(read_u64(data));
  const auto timeout = milliseconds{read_u64(data + 8) % (ferry::max_wire_duration_ms + 1)};
  const uint64_t stated = read_u64(data + 16);
  const uint64_t max = read_u64(data + 24);
  const auto kind = static_cast<message_kind>(data[32] % 3);
  const bool has_timeout = (data[32] & 0x80) != 0;

  if (over_limit(stated, max).empty() != (max == 0 || stated <= max))
    std::abort();

  headers arrived;
  bounded_headers wire{arrived};
  caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr),
                                  reinterpret_cast<const char*>(data + params_size),
                                  size - params_size};
  if (source(wire))
    return 0;
  headers left = arrived;
  auto ref = take_staged(left);
  check_take(arrived, left, ref);
  check_limit(kind, ref.budget, timeout);
  if (ref.handle)
    check_rewrite(arrived, *ref.handle, left_ns, has_timeout);
  return 0;
}
