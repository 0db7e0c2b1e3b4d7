#include "apps/bench/caf_setup.hpp"

#include <algorithm>
#include <thread>

#include <caf/io/middleman.hpp>

#include "runtime/node_config.hpp"

namespace ferry::bench {

void configure_caf(caf::actor_system_config& cfg) {
  node_config defaults;
  cfg.load<caf::io::middleman>();
  cfg.set("scheduler.policy", caf::atom_from_string(defaults.scheduler_policy));
  auto hw = std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", std::min<size_t>(4, hw));
  cfg.set("logger.console", caf::atom("none"));
}

} // namespace ferry::bench
