#include "apps/job_types.hpp"

namespace ferry::app {

void register_job_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<shard_result>("ferry::app::shard_result");
}

} // namespace ferry::app
