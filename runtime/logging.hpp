// Logging set-up: spdlog to stderr, with levels, one pattern for every
// process, or JSON lines for log collectors.
#pragma once

#include <string>

#include <caf/error.hpp>

namespace ferry {

/// Sets the level ("trace", "debug", "info", "warn", "error", "off") and the
/// format ("text", or "json": one JSON object a line, see
/// json_log_format.hpp); `role` names the process in each line (e.g.
/// "node", "job"). An unknown format is an error (and logs stay text).
caf::error init_logging(const std::string& level, const std::string& role,
                        const std::string& format = "text");

} // namespace ferry
