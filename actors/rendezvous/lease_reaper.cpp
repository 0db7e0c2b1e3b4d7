#include "actors/rendezvous/lease_reaper.hpp"

#include <algorithm>

#include <caf/actor_clock.hpp>
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
      // A local request: only an owner stuck for this long misses it, and
      // then the reaper tries again a period later (it stays armed, as the
      // owner believes it is until a sweep says no deadline is left).
      auto bound = std::max(std::chrono::milliseconds{10000}, 10 * period);
      self->request(owner, bound, sweep_atom::value)
        .then(
          [=](bool more) {
            // CAF 0.17 keeps an answered request's timeout armed until it
            // fires; a reaper that goes idle must leave no timer behind.
            self->home_system().clock().cancel_timeouts(self);
            if (more)
              self->delayed_send(self, period, tick_atom::value);
            else
              self->state.armed = false;
          },
          [=](caf::error&) { self->delayed_send(self, period, tick_atom::value); });
    },
  };
}

} // namespace

lease_reaper_actor spawn_lease_reaper(caf::actor_system& sys, owner_actor owner,
                                      std::chrono::milliseconds period) {
  return sys.spawn(reaper, std::move(owner), period);
}

} // namespace ferry
