// messenger_handlers: what a name on a node's messenger can be bound to, and
// the table of those bindings (a plain data structure the messenger owns).
//
// A handler is one of:
// - an actor: asked (handle_msg_atom, envelope) and answering an envelope
//   (the reply; a fire-and-forget message's reply is dropped);
// - a unary function: run by one of the messenger's handler threads (a
//   small set of detached actors), so it may block or touch the whole
//   payload;
// - a stream function: opens an item_source, whose next() the handler
//   threads call once per item, only while the caller has room for it
//   (back-pressure).
// Must never: run a function handler on a cooperative thread.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "actors/rendezvous/warm_buffers.hpp"
#include "protocol/messenger_wire.hpp"

namespace ferry::messenger {

/// Takes the request, returns the reply. The request's payload is taken
/// back for reuse once the function returns: to keep the bytes, move them
/// out (a view into them must not outlive the call).
using unary_function = std::function<caf::expected<envelope>(envelope&)>;

/// The items of one stream, produced on demand.
class item_source {
public:
  virtual ~item_source() = default;
  /// The next item, none at the end, or an error (which ends the stream).
  virtual caf::expected<std::optional<envelope>> next() = 0;
};

using item_source_ptr = std::shared_ptr<item_source>;
using stream_function = std::function<caf::expected<item_source_ptr>(envelope&)>;
using unary_function_ptr = std::shared_ptr<const unary_function>;
using stream_function_ptr = std::shared_ptr<const stream_function>;

/// A name's binding.
using handler = std::variant<caf::actor, unary_function_ptr, stream_function_ptr>;

class handler_table {
public:
  /// Binds `name`; an error text when the name is empty, too long or taken.
  std::string bind(const std::string& name, handler h);
  bool unbind(const std::string& name);
  const handler* find(const std::string& name) const;
  /// Unbinds every actor handler that is `who` (it went down).
  void forget_actor(const caf::actor_addr& who);
  size_t size() const { return table_.size(); }

private:
  std::map<std::string, handler> table_;
};

/// The handler threads: `threads` detached actors that run function
/// handlers, round robin. A unary handler's request payload, once it
/// returns, goes to `warm` (when set) for the next fetched payload.
///   (run_atom, unary_function_ptr, envelope) -> envelope
///   (open_atom, stream_function_ptr, envelope) -> item_source_ptr
///   (next_atom, item_source_ptr) -> (bool more, envelope)
caf::actor spawn_handler_threads(caf::actor_system& sys, size_t threads,
                                 std::shared_ptr<warm_buffers> warm);

} // namespace ferry::messenger

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::messenger::unary_function_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::messenger::stream_function_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::messenger::item_source_ptr)
