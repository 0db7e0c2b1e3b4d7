// Binds node_config to command-line options and config-file keys (CLI11), so
// every knob can be set as --knob value, --knob=value or in an INI/TOML file
// given with --config, and --help shows each default.
#pragma once

#include <CLI/App.hpp>

#include "runtime/node_config.hpp"

namespace ferry {

/// Options every process with a node takes (timeouts, logging).
void add_client_options(CLI::App& app, node_config& cfg);

/// All knobs of a serving node.
void add_node_options(CLI::App& app, node_config& cfg);

} // namespace ferry
