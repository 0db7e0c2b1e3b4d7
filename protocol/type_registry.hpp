// The list of protocol types every node registers with CAF, and ferry's
// error category. A type missing on either side of a connection makes CAF
// drop the message, so every node calls this before building its system.
#pragma once

#include <caf/actor_system_config.hpp>

namespace ferry {

void register_protocol_types(caf::actor_system_config& cfg);

} // namespace ferry
