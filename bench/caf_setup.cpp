#include "bench/caf_setup.hpp"

#include <caf/io/middleman.hpp>

#include "runtime/node_config.hpp"

namespace ferry::bench {

void configure_caf(caf::actor_system_config& cfg) {
  node_config defaults;
  cfg.load<caf::io::middleman>();
  cfg.set("scheduler.policy", caf::atom_from_string(defaults.scheduler_policy));
  cfg.set("scheduler.max-threads", defaults.effective_scheduler_threads());
  cfg.set("logger.console", caf::atom("none"));
}

} // namespace ferry::bench
