// The example distributed job's messages: a coordinator sends each worker a
// shard by handle; the worker sorts it, stages the sorted shard on its own
// node and answers a shard_result (by handle, plus the small statistics).
// Every node of a cluster registers these types (register_job_types).
#pragma once

#include <cstdint>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include "protocol/data_handle.hpp"

namespace ferry::app {

using job_task_atom = caf::atom_constant<caf::atom("job_task")>;

/// The name gateways spawn the job's worker under.
constexpr const char* sort_worker_name = "sort_worker";

constexpr size_t histogram_bins = 256; // by the top byte of each value

struct shard_result {
  uint64_t shard = 0;
  data_handle sorted;                 // the sorted shard, staged on the worker's node
  uint64_t count = 0;                 // values in the shard
  uint64_t sum = 0;                   // sum of the values (mod 2^64)
  std::vector<uint64_t> histogram;    // histogram_bins counts
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_result& x) {
  return f(caf::meta::type_name("ferry::app::shard_result"), x.shard, x.sorted,
           x.count, x.sum, x.histogram);
}

void register_job_types(caf::actor_system_config& cfg);

} // namespace ferry::app
