// messenger_client: the messenger for plain (non-actor) code, on top of a
// node: sends, unary calls and streams to named handlers, and binding this
// node's own handlers. Every call waits with a bound: a call's own timeout
// (plus a request timeout for the answer), or the node's transfer timeout.
// Actors use the node's messenger actor directly (node::messenger()).
// Must never: be used from inside an actor (it blocks its thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/messenger/messenger_interface.hpp"
#include "protocol/messenger_wire.hpp"

namespace ferry {

class node;

class messenger_client {
public:
  using envelope = messenger::envelope;
  using headers = messenger::headers;

  explicit messenger_client(node& n);

  /// Fire-and-forget: returns once the message is on its way.
  caf::error send(uint64_t node, const std::string& handler, byte_buffer payload,
                  headers hdrs = {});

  /// A unary call; timeout 0: none of the caller's own.
  caf::expected<envelope>
  call(uint64_t node, const std::string& handler, byte_buffer payload,
       headers hdrs = {}, std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

  /// A stream from a stream handler, read item by item.
  class stream {
  public:
    /// The next item, none at the end; an error ends the stream.
    caf::expected<std::optional<envelope>> next();
    /// Stops the producer (also done when the stream is destroyed early).
    void cancel();
    ~stream();
    stream(stream&&) noexcept;
    stream& operator=(stream&&) = delete;
    stream(const stream&) = delete;

  private:
    friend class messenger_client;
    stream(messenger_client* owner, uint64_t id);
    messenger_client* owner_;
    uint64_t id_;
    bool open_ = true;
  };

  caf::expected<stream> open_stream(uint64_t node, const std::string& handler,
                                    byte_buffer payload, headers hdrs = {});

  /// Binds a name on this node to a function (run on the handler threads).
  caf::error bind(const std::string& name, messenger::unary_function fn);
  caf::error bind_stream(const std::string& name, messenger::stream_function fn);
  /// Binds a name to an actor that answers (handle_msg_atom, envelope).
  caf::error bind_actor(const std::string& name, caf::actor handler);

private:
  std::chrono::milliseconds bound(std::chrono::milliseconds timeout) const;
  node* node_;
};

} // namespace ferry
