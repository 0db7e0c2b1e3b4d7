// staging_headers: the messenger's rules for a message whose payload goes by
// handle (transparent staging), as plain functions over its headers, so
// they are unit-tested without a network. The messenger's actors
// (actors/messenger/messenger.hpp, actors/messenger/staged_fetch.hpp) are shells around them.
//
// Rules it owns:
// - A payload larger than the staging threshold (256 KiB) is staged and
//   replaced by a handle in the `_rv` header; one at or below it goes inline.
// - A call with a timeout sends what is left of it in `_rv_budget_ms`,
//   rounded up to whole milliseconds, so the receiver never gives up before
//   the caller does.
// - The staging headers belong to the send that staged: a staged send
//   writes both itself (replacing forwarded ones, or dropping a forwarded
//   budget when it has none), and the receiver takes both out before the
//   handler runs.
// - The fetch ends at the first of two bounds: the caller's budget (then
//   the receiver drops it with no reply: the caller has its own timeout
//   already) and the receiver's staged_fetch_timeout (then a unary or sync
//   caller gets an error reply; a stream item or a fire-and-forget message
//   is dropped).
// - The receiver's limit (staged_payload_max) is checked on the size the
//   acquire states, before anything of that size is allocated.
// Must never: let a forwarded `_rv` or `_rv_budget_ms` reach a handler or
// another message, or trust a peer's budget past max_wire_duration_ms.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "protocol/data_handle.hpp"
#include "protocol/messenger_wire.hpp"

namespace ferry::messenger {

constexpr uint64_t default_staging_threshold = 256 * 1024; // DEFAULT_THRESHOLD
inline const std::string handle_header = "_rv";
inline const std::string budget_header = "_rv_budget_ms";

/// The payload goes by handle (it is larger than the threshold).
bool stages(uint64_t payload_bytes, uint64_t threshold = default_staging_threshold);

/// What is left of a caller's timeout as the wire budget: whole
/// milliseconds, rounded up (1 ns left is 1 ms), at least 0.
uint64_t budget_ms(std::chrono::nanoseconds left);

/// Writes a staged send's own headers into `h`: the handle, and the budget
/// when the call has a timeout (`left`); a forwarded budget is removed when
/// it has none.
void write_staged(headers& h, const data_handle& handle,
                  std::optional<std::chrono::nanoseconds> left);

/// What the receiver took out of a message's headers.
struct staged_ref {
  std::optional<data_handle> handle;                // none: the payload is inline
  std::optional<std::chrono::milliseconds> budget;  // the caller's, if any
  std::string error; // non-empty: a malformed `_rv` (the message is refused)
};

/// Removes both staging headers from `h` (a handler never sees them) and
/// says what they held. A budget without a handle means nothing and is
/// dropped; a budget beyond max_wire_duration_ms is clamped to it, and one
/// that does not parse is ignored.
staged_ref take_staged(headers& h);

/// Which bound ended a fetch, and what the receiver does then.
enum class fetch_bound { caller_budget, receiver_timeout };

struct fetch_limit {
  std::chrono::milliseconds after; // from when the message left the queue
  fetch_bound by;
};

enum class message_kind { fire_and_forget, unary, stream_item };

/// The first of the caller's budget and the receiver's staged_fetch_timeout
/// (a budget equal to the timeout counts as the caller's). A stream item
/// is exempt from the receiver's timeout (a dropped item would be lost with
/// no word to its stream): with no budget it gets no limit here, and only
/// its transfer's own bounds (each request's timeout, the GET's) end it.
std::optional<fetch_limit> limit_for(message_kind kind,
                                     std::optional<std::chrono::milliseconds> budget,
                                     std::chrono::milliseconds staged_fetch_timeout);

enum class expiry_action {
  drop_silently,         // nobody waits, or the caller's own timer answers it
  reply_fetch_timed_out, // the caller waits without a bound of its own
};

/// What a receiver does when a fetch's limit passes.
expiry_action on_expiry(fetch_bound by, message_kind kind);

/// The receiver's limit on a staged payload's stated size (0: no limit):
/// empty when it may be fetched, else the error text naming both sizes.
std::string over_limit(uint64_t stated_bytes, uint64_t staged_payload_max);

} // namespace ferry::messenger
