// The `ferry` subcommands. Each adds itself to the root app; its callback
// throws CLI::RuntimeError(code) on failure, after printing a clear message.
#pragma once

#include <CLI/App.hpp>

#include "protocol/data_handle.hpp"

namespace ferry::app {

void add_node_command(CLI::App& root);
void add_put_command(CLI::App& root);
void add_get_command(CLI::App& root);
void add_stat_command(CLI::App& root);
void add_job_command(CLI::App& root);
void add_call_command(CLI::App& root);
void add_bench_command(CLI::App& root);
void add_soak_command(CLI::App& root);
void add_probe_command(CLI::App& root);

/// Prints "ferry <command>: <message>" to stderr and fails with `code`.
[[noreturn]] void fail(const char* command, const std::string& message,
                       int code = 1);

/// The handle `text` names (as ferry put prints it), or fail(command) with
/// exit code 2.
data_handle handle_argument(const char* command, const std::string& text);

} // namespace ferry::app
