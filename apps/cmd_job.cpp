// `ferry job`: runs the example distributed job against running nodes.
#include <memory>

#include <CLI/CLI.hpp>

#include "apps/commands.hpp"
#include "apps/job_coordinator.hpp"
#include "runtime/logging.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct job_command {
  node_config cfg;
  job_options opts;
  uint64_t total_mib = 192;
};

} // namespace

void add_job_command(CLI::App& root) {
  auto cmd = std::make_shared<job_command>();
  cmd->cfg.log_level = "warn"; // a client command prints its own progress
  auto* sub = root.add_subcommand(
    "job", "Run the example distributed job (sort shards on every node)");
  add_client_options(*sub, cmd->cfg);
  sub->add_option("--nodes", cmd->opts.nodes, "HOST:PORT of every node")
    ->required()
    ->delimiter(',');
  sub->add_option("--mib", cmd->total_mib, "Input size in MiB over all shards")
    ->capture_default_str();
  sub->add_option("--shards-per-node", cmd->opts.shards_per_node)
    ->capture_default_str();
  sub->add_option("--seed", cmd->opts.seed, "Seed of the generated input")
    ->capture_default_str();
  sub->add_option("--summary-json", cmd->opts.summary_json,
                  "Also write the summary as JSON to this file");
  sub->callback([cmd] {
    init_logging(cmd->cfg.log_level, "job", cmd->cfg.log_format);
    cmd->opts.total_bytes = cmd->total_mib * MiB;
    if (auto rc = run_job(cmd->opts, cmd->cfg); rc != 0)
      throw CLI::RuntimeError(rc);
  });
}

} // namespace ferry::app
