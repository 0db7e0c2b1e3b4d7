#include "actors/rdma/get_fences.hpp"

#include <string>

#include "protocol/errors.hpp"

namespace ferry {

void get_fences::add(uint64_t worker_id, uint64_t up_to, caf::response_promise rp,
                     const runs_fn& runs, clock_type::time_point now) {
  if (!runs(worker_id, up_to)) {
    rp.deliver(true);
    return;
  }
  if (waiting_.size() >= max_waiting) {
    rp.deliver(make_error(errc::resource_exhausted,
                          std::to_string(max_waiting) + " UCX fences wait already"));
    return;
  }
  waiting_.push_back({worker_id, up_to, std::move(rp), now + limit});
}

void get_fences::check(const runs_fn& runs, clock_type::time_point now) {
  for (auto i = waiting_.begin(); i != waiting_.end();) {
    if (!runs(i->worker_id, i->up_to)) {
      i->rp.deliver(true);
    } else if (now >= i->deadline) {
      i->rp.deliver(make_error(errc::timeout, "a GET the fence waits for still runs after "
                                                + std::to_string(limit.count()) + " s"));
    } else {
      ++i;
      continue;
    }
    i = waiting_.erase(i);
  }
}

void get_fences::fail_all(const caf::error& err) {
  for (auto& f : waiting_)
    f.rp.deliver(err);
  waiting_.clear();
}

} // namespace ferry
