// probe_runner: one `ferry probe` on this node. It pulls a handle from its
// owner through this node's consumer service (as any consumer would),
// detaches, checksums the bytes and answers how it went, then quits. It
// runs detached: the checksum reads the whole payload.
// Answer: JSON {"path", "reason", "bytes", "seconds", "checksum"} (seconds:
// the get alone, without the detach; checksum: checksum64 in hex).
#pragma once

#include <chrono>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/rendezvous/consumer_service.hpp"
#include "protocol/atoms.hpp"
#include "protocol/data_handle.hpp"

namespace ferry {

using probe_runner_actor
  = caf::typed_actor<caf::replies_to<path_probe_atom, data_handle>::with<std::string>>;

probe_runner_actor spawn_probe_runner(caf::actor_system& sys,
                                      consumer_service_actor consumer,
                                      std::chrono::milliseconds get_timeout,
                                      std::chrono::milliseconds request_timeout);

} // namespace ferry
