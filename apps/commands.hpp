// The `ferry` subcommands. Each adds itself to the root app; its callback
// throws CLI::RuntimeError(code) on failure, after printing a clear message.
#pragma once

#include <CLI/App.hpp>

namespace ferry::app {

void add_node_command(CLI::App& root);
void add_put_command(CLI::App& root);
void add_get_command(CLI::App& root);
void add_stat_command(CLI::App& root);
void add_job_command(CLI::App& root);
void add_call_command(CLI::App& root);
void add_bench_command(CLI::App& root);
void add_probe_command(CLI::App& root);

/// Prints "ferry <command>: <message>" to stderr and fails with `code`.
[[noreturn]] void fail(const char* command, const std::string& message,
                       int code = 1);

} // namespace ferry::app
