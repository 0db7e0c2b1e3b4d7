// scenario_table: every row family of `ferry bench`, in the order they run,
// with what each measures and what bounds it. Rows whose feature is not
// built yet are declared here with what they need; they show as skipped.
// To enable one: give its entry a factory (scenarios.hpp) — nothing else.
#pragma once

#include <vector>

#include "bench/scenario.hpp"

namespace ferry::bench {

const std::vector<scenario_entry>& scenario_table();

} // namespace ferry::bench
