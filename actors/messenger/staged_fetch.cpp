#include "actors/messenger/staged_fetch.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "protocol/errors.hpp"

namespace ferry {

namespace {

struct fetch_state {
  caf::response_promise rp;
  bool answered = false;
  static inline const char* name = "ferry.staged_fetch";
};

using fetch_ptr = caf::stateful_actor<fetch_state>*;

template <class Result>
void answer(fetch_ptr self, Result&& result) {
  auto& st = self->state;
  if (st.answered)
    return;
  st.answered = true;
  st.rp.deliver(std::forward<Result>(result));
  self->quit();
}

caf::behavior staged_fetch(fetch_ptr self, staged_fetch_params p) {
  return {
    [=](fetch_atom) {
      self->state.rp = self->make_response_promise();
      auto bound = p.limit ? std::min(*p.limit, p.bound) : p.bound;
      self->request(p.consumer, bound, fetch_atom::value, p.handle)
        .then(
          [=](byte_buffer& bytes) {
            answer(self, std::move(bytes));
          },
          [=](caf::error& err) {
            if (err == caf::sec::request_timeout)
              err = make_error(errc::timeout, "the fetch of " + to_string(p.handle)
                                                + " ran out of time");
            answer(self, std::move(err));
          });
      if (p.limit)
        self->delayed_send(self, *p.limit, tick_atom::value);
      return self->state.rp;
    },
    [=](tick_atom) {
      answer(self, make_error(errc::timeout, "the fetch of " + to_string(p.handle)
                                               + " did not finish within "
                                               + std::to_string(p.limit->count())
                                               + " ms"));
    },
  };
}

} // namespace

caf::actor spawn_staged_fetch(caf::actor_system& sys, staged_fetch_params p) {
  return sys.spawn(staged_fetch, std::move(p));
}

} // namespace ferry
