#include "actors/rendezvous/bulk_copier.hpp"

#include <algorithm>
#include <cstring>

#include <caf/actor_pool.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

namespace ferry {

namespace {

// (The unused argument: CAF 0.17 dereferences a null argument tuple for an
// argument-less spawn, which UBSan reports.)
caf::behavior copier(caf::event_based_actor*, int) {
  return {
    [](copy_atom, const copy_job& job) {
      run_copy(job);
      return caf::ok_atom::value;
    },
  };
}

} // namespace

void run_copy(const copy_job& job) {
  if (job.dst != nullptr)
    std::memcpy(job.dst, job.src, job.len);
  else if (job.out)
    assign_for_bulk(*job.out, job.src, job.len);
}

bool sliced_copy::step() {
  auto n = std::min(copy_slice_bytes, job_.len - done_);
  if (job_.dst != nullptr) {
    std::memcpy(job_.dst + done_, job_.src + done_, n);
  } else if (job_.out) {
    if (done_ == 0)
      reserve_for_bulk(*job_.out, job_.len); // room only: slices append
    place_at(*job_.out, done_, job_.src + done_, n);
  }
  done_ += n;
  return done_ == job_.len;
}

caf::actor spawn_bulk_copier(caf::actor_system& sys, size_t workers) {
  auto spawn_one = [&sys] { return sys.spawn<caf::detached>(copier, 0); };
  return caf::actor_pool::make(sys.dummy_execution_unit(), std::max<size_t>(1, workers),
                               spawn_one, caf::actor_pool::round_robin());
}

} // namespace ferry
