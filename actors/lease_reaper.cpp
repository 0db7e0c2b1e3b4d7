#include "actors/lease_reaper.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ferry {

namespace {

struct reaper_state {
  bool armed = false;
  static inline const char* name = "ferry.lease_reaper";
};

lease_reaper_actor::behavior_type
reaper(lease_reaper_actor::stateful_pointer<reaper_state> self,
       owner_actor owner, std::chrono::milliseconds period) {
  return {
    [=](arm_atom) {
      if (self->state.armed)
        return;
      self->state.armed = true;
      self->delayed_send(self, period, tick_atom::value);
    },
    [=](tick_atom) {
      self->request(owner, caf::infinite, sweep_atom::value)
        .then(
          [=](bool more) {
            if (more)
              self->delayed_send(self, period, tick_atom::value);
            else
              self->state.armed = false;
          },
          [=](caf::error&) { self->state.armed = false; });
    },
  };
}

} // namespace

lease_reaper_actor spawn_lease_reaper(caf::actor_system& sys, owner_actor owner,
                                      std::chrono::milliseconds period) {
  return sys.spawn(reaper, std::move(owner), period);
}

} // namespace ferry
