// caf_setup: the CAF actor system of the caf_* scenarios and their peer, set
// up like a ferry node's (same scheduler policy and thread count, middleman
// loaded, console logger off) so the caf rows are the honest baseline of
// what ferry's chunked path runs on. Also the bench's own atoms.
// Must never: register ferry's protocol types (the caf rows carry only
// built-in types: std::vector<char>, uint64_t).
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

namespace ferry::bench {

using bench_prepare_atom = caf::atom_constant<caf::atom("b_prepare")>;
using bench_fetch_atom = caf::atom_constant<caf::atom("b_fetch")>;
using bench_ping_atom = caf::atom_constant<caf::atom("b_ping")>;

/// A config like ferry::node builds: policy "sharing", the node's default
/// scheduler threads, middleman loaded, logger quiet.
void configure_caf(caf::actor_system_config& cfg);

} // namespace ferry::bench
