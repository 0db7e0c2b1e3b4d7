// `ferry node`: runs a node until SIGINT or SIGTERM.
#include <memory>

#include <CLI/CLI.hpp>

#include "apps/commands.hpp"
#include "apps/job_worker.hpp"
#include "runtime/node_options.hpp"
#include "runtime/run_node.hpp"

namespace ferry::app {

namespace {

struct node_command {
  node_config cfg;
  std::string ready_file;
};

} // namespace

void add_node_command(CLI::App& root) {
  auto cmd = std::make_shared<node_command>();
  // A serving node maps its first arena at start, so the transparent
  // payloads it stages (replies, stream items) can take the RDMA path.
  cmd->cfg.map_arena_at_start = true;
  auto* sub = root.add_subcommand("node", "Run a node until SIGINT or SIGTERM");
  add_node_options(*sub, cmd->cfg);
  sub->add_option("--ready-file", cmd->ready_file,
                  "Write 'PORT METRICS_PORT WORKER_ID' here once listening");
  sub->callback([cmd] {
    if (int status = serve_node(cmd->cfg, cmd->ready_file, job_workers()); status != 0)
      throw CLI::RuntimeError(status);
  });
}

} // namespace ferry::app
