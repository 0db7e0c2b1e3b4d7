#include "runtime/builtin_handlers.hpp"


#include <caf/scoped_actor.hpp>
#include <nlohmann/json.hpp>

#include "protocol/checksum.hpp"

namespace ferry {

namespace {

using messenger::envelope;

caf::expected<envelope> echo(envelope& in) {
  envelope out;
  out.hdrs = std::move(in.hdrs);
  out.payload = std::move(in.payload);
  return out;
}

caf::expected<envelope> checksum(envelope& in) {
  auto hex = checksum_text(checksum64(in.payload.data(), in.payload.size()));
  envelope out;
  out.hdrs["bytes"] = std::to_string(in.payload.size());
  out.hdrs["checksum"] = hex;
  auto text = nlohmann::json{{"bytes", in.payload.size()}, {"checksum", hex}}.dump();
  out.payload.assign(text.begin(), text.end());
  return out;
}

} // namespace

caf::error bind_builtin_handlers(caf::actor_system& sys, const messenger_actor& m,
                                 std::chrono::milliseconds timeout) {
  caf::scoped_actor self{sys};
  caf::error failed;
  auto bind = [&](const char* name, messenger::unary_function fn) {
    auto ptr = std::make_shared<const messenger::unary_function>(std::move(fn));
    self->request(m, timeout, bind_atom::value, std::string{name}, ptr)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
  };
  bind(echo_handler, echo);
  if (!failed)
    bind(checksum_handler, checksum);
  return failed;
}

} // namespace ferry
