// shutdown_deadline: the one deadline node::stop shares among its steps
// (the RDMA drain, unpublishing, each actor's stop, the actor system's
// teardown): each step gets what is left of `shutdown_timeout_ms`, and a
// step reached after it passed still gets a short floor, so every actor is
// asked to stop and the whole stop stays bounded by the timeout plus one
// floor per step.
#pragma once

#include <chrono>

namespace ferry {

class shutdown_deadline {
public:
  using clock = std::chrono::steady_clock;

  shutdown_deadline(std::chrono::milliseconds total, std::chrono::milliseconds floor,
                    clock::time_point start = clock::now())
    : until_(start + total), floor_(floor) {}

  /// What is left of the deadline at `now`, at least the floor.
  std::chrono::milliseconds left(clock::time_point now = clock::now()) const {
    auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(until_ - now);
    return rest > floor_ ? rest : floor_;
  }

  bool passed(clock::time_point now = clock::now()) const { return now >= until_; }

private:
  clock::time_point until_;
  std::chrono::milliseconds floor_;
};

} // namespace ferry
