#include "soak/fault_plan.hpp"

#include <algorithm>
#include <iterator>
#include <random>

namespace ferry::soak {

const char* to_string(fault_kind k) {
  switch (k) {
    case fault_kind::kill_consumer_mid_pull:
      return "kill_consumer_mid_pull";
    case fault_kind::kill_consumer_mid_get:
      return "kill_consumer_mid_get";
    case fault_kind::kill_owner:
      return "kill_owner";
    case fault_kind::stop_resume:
      return "stop_resume";
    case fault_kind::graceful_shutdown:
      return "graceful_shutdown";
    case fault_kind::budget_burst:
      return "budget_burst";
  }
  return "unknown";
}

std::vector<planned_fault> make_fault_plan(uint64_t seed, std::chrono::milliseconds duration,
                                           std::chrono::milliseconds interval) {
  std::vector<planned_fault> plan;
  if (interval.count() <= 0)
    return plan;
  std::mt19937_64 rng{seed};
  std::vector<fault_kind> turn;
  auto jitter = std::max<int64_t>(interval.count() / 4, 1);
  for (auto at = interval.count();; at += interval.count()) {
    auto when = at + static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * jitter)) - jitter;
    if (when >= duration.count())
      break;
    if (turn.empty()) { // a new round: every kind once, in a seeded order
      turn.assign(std::begin(all_fault_kinds), std::end(all_fault_kinds));
      std::shuffle(turn.begin(), turn.end(), rng);
    }
    plan.push_back({std::chrono::milliseconds{when}, turn.back(), rng()});
    turn.pop_back();
  }
  return plan;
}

} // namespace ferry::soak
