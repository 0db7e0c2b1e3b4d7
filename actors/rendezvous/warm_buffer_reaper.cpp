#include "actors/rendezvous/warm_buffer_reaper.hpp"

#include <malloc.h>

#include <algorithm>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/rendezvous/warm_buffers.hpp"

namespace ferry {

namespace {

using reap_atom = caf::atom_constant<caf::atom("wbreap")>;

} // namespace

std::chrono::milliseconds warm_buffer_reap_period(std::chrono::milliseconds max_idle) {
  return std::max(max_idle / 2, std::chrono::milliseconds{1000});
}

size_t reap_idle_warm_buffers(warm_buffers& warm, std::chrono::steady_clock::time_point now,
                              std::chrono::milliseconds max_idle) {
  auto freed = warm.drop_idle(now, max_idle);
  if (freed > 0) {
    // Buffers below glibc's mmap threshold (the node raises it to 32 MiB)
    // were heap: free keeps their pages until a trim gives them back.
    ::malloc_trim(0);
    spdlog::debug("warm buffers: {} bytes idle for {} ms let go", freed, max_idle.count());
  }
  return freed;
}

caf::actor spawn_warm_buffer_reaper(caf::actor_system& sys, std::shared_ptr<warm_buffers> warm,
                                    std::chrono::milliseconds max_idle) {
  return sys.spawn<caf::detached>(
    [](caf::event_based_actor* self, std::shared_ptr<warm_buffers> warm,
       std::chrono::milliseconds max_idle) -> caf::behavior {
      auto period = warm_buffer_reap_period(max_idle);
      self->delayed_send(self, period, reap_atom::value);
      return {
        [self, warm, max_idle, period](reap_atom) {
          reap_idle_warm_buffers(*warm, std::chrono::steady_clock::now(), max_idle);
          self->delayed_send(self, period, reap_atom::value);
        },
      };
    },
    std::move(warm), max_idle);
}

} // namespace ferry
