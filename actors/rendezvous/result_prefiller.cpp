#include "actors/rendezvous/result_prefiller.hpp"

#include <exception>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/rendezvous/warm_buffers.hpp"
#include "protocol/byte_buffer.hpp"

namespace ferry {

bool prepare_result_buffer(warm_buffers& warm, uint64_t size) {
  if (!warm.wants_prepared(size))
    return false;
  byte_buffer room;
  try {
    reserve_for_bulk(room, warm_buffers::prepared_capacity(size));
    room.resize(size); // the fill faults its pages in, here and not in a get
  } catch (const std::exception& e) { // bad_alloc: the next get makes its own
    spdlog::debug("warm buffers: no buffer of {} bytes prepared: {}", size, e.what());
    return false;
  }
  return warm.keep_prepared(std::move(room));
}

caf::actor spawn_result_prefiller(caf::actor_system& sys, std::shared_ptr<warm_buffers> warm) {
  return sys.spawn<caf::detached>(
    [](caf::event_based_actor*, std::shared_ptr<warm_buffers> warm) -> caf::behavior {
      return {
        [warm](prefill_atom, uint64_t size) { prepare_result_buffer(*warm, size); },
      };
    },
    std::move(warm));
}

} // namespace ferry
