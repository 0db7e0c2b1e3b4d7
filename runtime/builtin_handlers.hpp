// builtin_handlers: the handlers every node binds, so an operator can check
// a node and its data path from a shell (`ferry call`):
//   ferry.echo      replies the payload and the headers it got
//   ferry.checksum  replies the payload's size and checksum, in the headers
//                   "bytes" and "checksum" and as a JSON payload
// Both run on the messenger's handler threads (they touch the whole payload).
#pragma once

#include <chrono>

#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include "actors/messenger/messenger_interface.hpp"

namespace ferry {

inline constexpr const char* echo_handler = "ferry.echo";
inline constexpr const char* checksum_handler = "ferry.checksum";

caf::error bind_builtin_handlers(caf::actor_system& sys, const messenger_actor& m,
                                 std::chrono::milliseconds timeout);

} // namespace ferry
