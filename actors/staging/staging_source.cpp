#include "actors/staging/staging_source.hpp"

#include <algorithm>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/staging/source_session.hpp"
#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"
#include "protocol/remote_staging_wire.hpp"
#include "staging/remote_geometry.hpp"

namespace ferry {

namespace {

struct front_state {
  staging_source_params p;
  uint64_t next_session = 1;
  std::vector<caf::actor> sessions; // live (monitored)
  bool stopping = false;
  static inline const char* name = "ferry.staging_source";
};
using front_actor = caf::stateful_actor<front_state>;

/// The checks a Pin passes before anything is taken.
caf::error check_pin(const staging_source_params& p, const stage_pin& pin) {
  if (!p.enabled)
    return make_error(errc::staging_unavailable,
                      "remote staging is off on this node (--remote-staging)");
  if (!p.stager->unavailable_reason().empty())
    return make_error(errc::staging_unavailable, p.stager->unavailable_reason());
  if (pin.epoch != p.epoch)
    return make_error(errc::invalid_argument,
                      "Pin: the registration is from another incarnation of this node");
  if (pin.direction > static_cast<uint8_t>(stage_direction::write)
      || pin.chunk_size < staging::min_remote_chunk || pin.depth == 0
      || pin.depth > staging::max_pipeline_depth || pin.budget_ms == 0
      || !staging::chunk_count_fits(pin.length, pin.chunk_size))
    return make_error(errc::protocol_violation,
                      "Pin: direction, chunk size, depth or budget out of bounds");
  auto active = p.stats->source_active.load();
  if (active >= 0 && static_cast<size_t>(active) >= p.slots)
    return make_error(errc::resource_exhausted,
                      "Pin: all " + std::to_string(p.slots)
                        + " remote staging session slots are taken");
  return {};
}

caf::behavior staging_source(front_actor* self, staging_source_params p) {
  p.stats->source_slots.store(p.slots);
  self->state.p = std::move(p);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& v = self->state.sessions;
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const caf::actor& a) { return a.address() == dm.source; }),
            v.end());
  });
  return {
    [self](stop_work_atom) -> std::vector<caf::actor> {
      self->state.stopping = true;
      return self->state.sessions;
    },
    [self](stage_pin_atom a, const stage_pin& pin) -> caf::result<caf::message> {
      auto& st = self->state;
      if (st.stopping) {
        st.p.stats->pins_refused.fetch_add(1);
        return make_error(errc::draining, "Pin: this node is stopping");
      }
      if (auto err = check_pin(st.p, pin)) {
        st.p.stats->pins_refused.fetch_add(1);
        return err;
      }
      auto session = st.next_session++;
      auto loan = st.p.exposures->lend(pin, session);
      if (!loan) {
        st.p.stats->pins_refused.fetch_add(1);
        return std::move(loan.error());
      }
      st.p.stats->source_active.fetch_add(1); // the session gives it back
      source_session_params sp;
      sp.source = st.p;
      sp.loan = *loan;
      sp.session = session;
      sp.requester = caf::actor_cast<caf::actor>(self->current_sender());
      auto actor = spawn_source_session(self->system(), std::move(sp));
      self->monitor(actor);
      st.sessions.push_back(actor);
      return self->delegate(actor, a, pin);
    },
  };
}

} // namespace

caf::actor spawn_staging_source(caf::actor_system& sys, staging_source_params p) {
  return sys.spawn(staging_source, std::move(p));
}

} // namespace ferry
