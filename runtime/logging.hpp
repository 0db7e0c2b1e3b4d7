// Logging set-up: spdlog to stderr, with levels, one pattern for every process.
#pragma once

#include <string>

namespace ferry {

/// Sets the level ("trace", "debug", "info", "warn", "error", "off") and the
/// pattern; `role` names the process in each line (e.g. "node", "job").
void init_logging(const std::string& level, const std::string& role);

} // namespace ferry
