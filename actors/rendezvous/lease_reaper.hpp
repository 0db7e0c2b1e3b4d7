// lease_reaper: ticks the owner's sweep while any lease deadline or slot
// time-to-live exists, and sleeps otherwise. The owner arms it each time it
// creates a deadline; an armed reaper ignores further arms. The owner's
// answer to each sweep says whether to tick again.
// Must never: keep a timer running on a node that stages nothing with a deadline.
#pragma once

#include <chrono>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/rendezvous/owner_interface.hpp"
#include "protocol/atoms.hpp"

namespace ferry {

using lease_reaper_actor
  = caf::typed_actor<caf::reacts_to<arm_atom>, caf::reacts_to<tick_atom>>;

lease_reaper_actor spawn_lease_reaper(caf::actor_system& sys, owner_actor owner,
                                      std::chrono::milliseconds period);

} // namespace ferry
