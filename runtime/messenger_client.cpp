#include "runtime/messenger_client.hpp"

#include <caf/scoped_actor.hpp>

#include "protocol/errors.hpp"
#include "runtime/node.hpp"

namespace ferry {

namespace {

template <class... Ts>
caf::error ask_ok(node& n, std::chrono::milliseconds timeout, Ts&&... xs) {
  caf::scoped_actor self{n.system()};
  caf::error failed;
  self->request(n.messenger(), timeout, std::forward<Ts>(xs)...)
    .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
  return failed;
}

} // namespace

messenger_client::messenger_client(node& n) : node_(&n) {
}

std::chrono::milliseconds
messenger_client::bound(std::chrono::milliseconds timeout) const {
  const auto& cfg = node_->config();
  // The messenger answers every call within its own bounds; this one only
  // keeps a lost answer from blocking forever.
  auto base = timeout.count() > 0 ? timeout : cfg.transfer_timeout();
  return base + 2 * cfg.request_timeout();
}

caf::error messenger_client::send(uint64_t to, const std::string& handler,
                                  byte_buffer payload, headers hdrs) {
  return ask_ok(*node_, bound(std::chrono::milliseconds{0}), msg_send_atom::value, to,
                envelope{handler, std::move(hdrs), std::move(payload)});
}

caf::expected<messenger::envelope>
messenger_client::call(uint64_t to, const std::string& handler, byte_buffer payload,
                       headers hdrs, std::chrono::milliseconds timeout) {
  caf::scoped_actor self{node_->system()};
  caf::expected<envelope> result = make_error(errc::timeout);
  self
    ->request(node_->messenger(), bound(timeout), msg_call_atom::value, to,
              envelope{handler, std::move(hdrs), std::move(payload)},
              static_cast<uint64_t>(std::max<int64_t>(0, timeout.count())))
    .receive([&](envelope& reply) { result = std::move(reply); },
             [&](caf::error& err) {
               result = err == caf::sec::request_timeout
                          ? make_error(errc::timeout, "the call to '" + handler
                                                        + "' did not answer in time")
                          : std::move(err);
             });
  return result;
}

caf::expected<messenger_client::stream>
messenger_client::open_stream(uint64_t to, const std::string& handler,
                              byte_buffer payload, headers hdrs) {
  caf::scoped_actor self{node_->system()};
  caf::expected<uint64_t> id = make_error(errc::timeout);
  self
    ->request(node_->messenger(), bound(std::chrono::milliseconds{0}),
              msg_stream_atom::value, to,
              envelope{handler, std::move(hdrs), std::move(payload)})
    .receive([&](uint64_t sid) { id = sid; },
             [&](caf::error& err) { id = std::move(err); });
  if (!id)
    return std::move(id.error());
  return stream{this, *id};
}

messenger_client::stream::stream(messenger_client* owner, uint64_t id)
  : owner_(owner), id_(id) {
}

messenger_client::stream::stream(stream&& other) noexcept
  : owner_(other.owner_), id_(other.id_), open_(other.open_) {
  other.open_ = false;
}

messenger_client::stream::~stream() {
  cancel();
}

caf::expected<std::optional<messenger::envelope>> messenger_client::stream::next() {
  if (!open_)
    return make_error(errc::stream_ended, "the stream is closed");
  caf::scoped_actor self{owner_->node_->system()};
  caf::expected<std::optional<envelope>> result = make_error(errc::timeout);
  self
    ->request(owner_->node_->messenger(), owner_->bound(std::chrono::milliseconds{0}),
              stream_next_atom::value, id_)
    .receive(
      [&](bool more, envelope& item) {
        if (more)
          result = std::optional<envelope>{std::move(item)};
        else
          result = std::optional<envelope>{};
      },
      [&](caf::error& err) { result = std::move(err); });
  if (!result || !*result)
    open_ = false; // ended: the messenger has forgotten it
  return result;
}

void messenger_client::stream::cancel() {
  if (!open_)
    return;
  open_ = false;
  caf::anon_send(owner_->node_->messenger(), stream_cancel_atom::value, id_);
}

caf::error messenger_client::bind(const std::string& name,
                                  messenger::unary_function fn) {
  auto ptr = std::make_shared<const messenger::unary_function>(std::move(fn));
  return ask_ok(*node_, node_->config().request_timeout(), bind_atom::value, name, ptr);
}

caf::error messenger_client::bind_stream(const std::string& name,
                                         messenger::stream_function fn) {
  auto ptr = std::make_shared<const messenger::stream_function>(std::move(fn));
  return ask_ok(*node_, node_->config().request_timeout(), bind_atom::value, name, ptr);
}

caf::error messenger_client::bind_actor(const std::string& name, caf::actor handler) {
  return ask_ok(*node_, node_->config().request_timeout(), bind_atom::value, name,
                std::move(handler));
}

} // namespace ferry
