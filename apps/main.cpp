// ferry: run a node, stage and fetch payloads, call a node's handlers,
// inspect a node, run the example distributed job.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "apps/commands.hpp"
#include "runtime/version.hpp"

namespace ferry::app {

void fail(const char* command, const std::string& message, int code) {
  std::fprintf(stderr, "ferry %s: %s\n", command, message.c_str());
  throw CLI::RuntimeError(code);
}

data_handle handle_argument(const char* command, const std::string& text) {
  auto h = parse_data_handle(text);
  if (!h)
    fail(command, "'" + text
                    + "' is not a handle (expected 16 hex digits, '-', 16 hex digits)",
         2);
  return *h;
}

} // namespace ferry::app

int main(int argc, char** argv) {
  CLI::App app{"ferry: pass large data between distributed actors by handle"};
  app.require_subcommand(1);
  app.set_config("--config", "", "INI or TOML file with option values");
  // A key the file misspells is an error, never silently lost.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.set_version_flag("--version", ferry::version_text());
  ferry::app::add_node_command(app);
  ferry::app::add_put_command(app);
  ferry::app::add_get_command(app);
  ferry::app::add_stat_command(app);
  ferry::app::add_probe_command(app);
  ferry::app::add_call_command(app);
  ferry::app::add_job_command(app);
#ifdef FERRY_WITH_BENCH
  ferry::app::add_bench_command(app);
  ferry::app::add_soak_command(app);
#endif
  CLI11_PARSE(app, argc, argv);
  return 0;
}
