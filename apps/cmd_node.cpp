// `ferry node`: runs a node until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "apps/commands.hpp"
#include "apps/job_worker.hpp"
#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct node_command {
  node_config cfg;
  std::string ready_file;
};

void run_node(const node_command& cmd) {
  init_logging(cmd.cfg.log_level, "node");
  // Block the stop signals before any thread starts; sigwait takes them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  node n{cmd.cfg, job_workers()};
  if (auto err = n.start())
    fail("node", describe(err));
  std::printf("ferry node %016llx listening on %s:%u",
              static_cast<unsigned long long>(n.worker_id()),
              cmd.cfg.bind_host.c_str(), n.port());
  if (cmd.cfg.metrics_port >= 0)
    std::printf(", metrics on http://%s:%u/metrics", cmd.cfg.bind_host.c_str(),
                n.metrics_port());
  std::printf("\n");
  std::fflush(stdout);
  if (!cmd.ready_file.empty()) {
    auto tmp = cmd.ready_file + ".tmp";
    std::ofstream{tmp} << n.port() << " " << n.metrics_port() << " "
                       << n.worker_id() << "\n";
    std::rename(tmp.c_str(), cmd.ready_file.c_str());
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  n.stop();
  spdlog::info("stopped");
}

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
  sub->callback([cmd] { run_node(*cmd); });
}

} // namespace ferry::app
