// messenger_state: what the messenger actor keeps (its handler table, the
// calls waiting on peers, the streams it consumes and produces) and the
// functions its behaviour (messenger.cpp) is made of, by the file that
// defines them:
//   messenger_state.cpp     peers, bounds, call tracking, the metrics
//   messenger_outgoing.cpp  an envelope leaving: its payload staged, unstaged
//   messenger_incoming.cpp  a message arriving: its staged payload fetched,
//                           its handler run, the reply readied
//   messenger_streams.cpp   streams: the consumer's inbox, the producer's pump
// Internal to the messenger room; everything runs in the messenger actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/messenger/messenger.hpp"
#include "actors/messenger/stream_window.hpp"
#include "protocol/staging_headers.hpp"

namespace ferry::messenger_impl {

using messenger::envelope;
using messenger::message_kind;
using clock_type = std::chrono::steady_clock;
using deadline = std::optional<clock_type::time_point>;

/// The most items a peer may ask a producer here to run ahead.
constexpr uint32_t max_stream_window = 256;

/// A stream this node consumes (its caller is local).
struct inbound_stream {
  caf::actor producer;      // the producing node's messenger
  uint64_t producer_id = 0; // the stream's id there (0 until it opened)
  messenger::stream_inbox inbox;
  std::optional<caf::typed_response_promise<bool, envelope>> waiting;
  explicit inbound_stream(uint32_t window) : inbox(window) {
  }
};

/// A stream this node produces (from one of its stream handlers).
struct outbound_stream {
  caf::actor consumer;      // the caller's messenger
  uint64_t consumer_id = 0; // the stream's id there
  messenger::stream_credit credit;
  messenger::item_source_ptr source;
  // The handles of the latest staged items (at most two windows: older ones
  // were fetched before the consumer granted the credit that followed them).
  // A stream stopped early, or whose consumer went down, unstages them, so
  // items it will never fetch do not wait for their TTL.
  std::deque<data_handle> staged;
  explicit outbound_stream(uint32_t window) : credit(window) {
  }
};

struct messenger_state {
  messenger_params p;
  messenger::handler_table handlers;
  caf::actor threads; // function handlers run here
  // Calls waiting on a peer, failed at once when it goes down.
  struct pending {
    caf::actor_addr peer;
    std::function<void(caf::error)> fail;
  };
  std::map<uint64_t, pending> calls;
  uint64_t next_call = 1;
  std::map<uint64_t, inbound_stream> inbound;
  std::map<uint64_t, outbound_stream> outbound;
  uint64_t next_stream = 1;
  std::set<caf::actor_addr> monitored;
  static inline const char* name = "ferry.messenger";
};

using messenger_ptr = messenger_actor::stateful_pointer<messenger_state>;

/// Gets a readied envelope, or why it could not be readied.
using envelope_continuation = std::function<void(caf::expected<envelope>)>;
/// Gets a handler's readied reply; none: nobody is answered.
using reply_continuation = std::function<void(std::optional<caf::expected<envelope>>)>;

// -- messenger_state.cpp --

messenger_metrics* metrics(messenger_ptr self);
void update_stream_gauge(messenger_ptr self);
bool is_self(messenger_ptr self, const caf::actor& a);
/// Monitors a peer's messenger once (not this one).
void watch(messenger_ptr self, const caf::actor& peer);
/// The messenger of `node`: this one, or a connected peer's.
caf::expected<caf::actor> messenger_of(messenger_ptr self, uint64_t node);
/// What is left until t, at least 1 ms.
std::chrono::milliseconds left_until(clock_type::time_point t);
/// The bound on a request that waits for a peer's handler.
std::chrono::milliseconds call_bound(messenger_ptr self, const deadline& until);
/// Records a call waiting on `peer`; `fail` runs if the peer goes down first.
uint64_t track(messenger_ptr self, const caf::actor& peer,
               std::function<void(caf::error)> fail);
/// False when the call was already failed (its peer went down).
bool untrack(messenger_ptr self, uint64_t id, const caf::actor& peer);
/// A request's error, said in terms of what was asked.
caf::error with_context(caf::error err, const std::string& what);
void count_call(messenger_ptr self, const std::string& name, bool known,
                const char* result);
caf::error unknown_handler(messenger_ptr self, const std::string& name);

// -- messenger_outgoing.cpp --

/// Readies `env` for `target`: drops staging headers it carries from
/// elsewhere, checks its bounds, and stages its payload when it is above
/// the threshold and leaves this node. Calls k with the envelope to send.
void prepare(messenger_ptr self, const caf::actor& target, envelope env,
             deadline until, envelope_continuation k);
/// The handle a prepared envelope carries (it was staged), if any.
std::optional<data_handle> staged_handle(const envelope& e);
/// Drops a staged copy nobody will fetch (see messenger_outgoing.cpp).
void unstage(messenger_ptr self, const std::optional<data_handle>& h);
/// A stream that ends early drops the copies staged for its items.
void unstage_items(messenger_ptr self, outbound_stream& s);

// -- messenger_incoming.cpp --

/// How a fetch ended, for the metrics and for what the message does next.
enum class fetch_outcome { ok, timeout, over_limit, failed };
using fetched_continuation = std::function<void(envelope)>;
using fetch_failed_continuation
  = std::function<void(fetch_outcome, caf::error, messenger::fetch_bound)>;

/// Fetches the payload `ref` names into `env`, within the limit its kind
/// and budget give. Calls on_ready(envelope) or on_failed(outcome, error,
/// bound that ended it).
void resolve(messenger_ptr self, envelope env, const messenger::staged_ref& ref,
             message_kind kind, fetched_continuation on_ready,
             fetch_failed_continuation on_failed);
/// What a unary caller is told when its payload could not be fetched, or
/// none when it is told nothing (its own timer answers it).
std::optional<caf::error> refusal(fetch_outcome o, caf::error err,
                                  messenger::fetch_bound by, message_kind kind,
                                  std::chrono::milliseconds staged_fetch_timeout);
/// A received unary call or send, from taking its staging headers off to
/// the handler's reply (k gets it; none: no reply at all).
void handle_incoming(messenger_ptr self, envelope env, message_kind kind,
                     const caf::actor& caller, reply_continuation k);

// -- messenger_streams.cpp --

/// Answers the caller's pending next, if the inbox has something for it.
void serve(messenger_ptr self, uint64_t id);
/// The stream fails (its caller learns at its next take) and, when asked,
/// its producer is told to stop.
void fail_inbound(messenger_ptr self, uint64_t id, const std::string& why,
                  bool stop_producer);
/// An item of an inbound stream arrived from its producer.
void on_item(messenger_ptr self, uint64_t id, envelope item);
/// Asks the source for the next item while the consumer has room.
void pump(messenger_ptr self, uint64_t id);
/// A peer opens a stream from one of this node's stream handlers.
void open_outbound(messenger_ptr self, caf::typed_response_promise<uint64_t> rp,
                   messenger::stream_function_ptr fn, envelope request,
                   caf::actor consumer, uint64_t consumer_id, uint32_t window);

} // namespace ferry::messenger_impl
