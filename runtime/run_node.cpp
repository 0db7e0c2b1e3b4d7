#include "runtime/run_node.hpp"

#include <csignal>
#include <pthread.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node_options.hpp"
#include "runtime/version.hpp"

namespace ferry {

namespace {

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

} // namespace

void block_stop_signals() {
  auto set = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_stop_signal() {
  auto set = stop_signal_set();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

int serve_node(const node_config& cfg, const std::string& ready_file,
               worker_registry workers, type_registrar extra_types,
               const on_node_started& started) {
  if (auto err = init_logging(cfg.log_level, "node", cfg.log_format)) {
    std::fprintf(stderr, "ferry node: %s\n", describe(err).c_str());
    return 2;
  }
  block_stop_signals(); // before any thread starts

  node n{cfg, std::move(workers), std::move(extra_types)};
  if (auto err = n.start()) {
    std::fprintf(stderr, "ferry node: %s\n", describe(err).c_str());
    return 1;
  }
  if (started && !started(n))
    return 1;
  auto listening = fmt::format("ferry node {:016x} listening on {}:{}", n.worker_id(),
                               cfg.bind_host, n.port());
  if (cfg.metrics_port >= 0)
    listening += fmt::format(", metrics on http://{}:{}/metrics", cfg.bind_host,
                             n.metrics_port());
  if (cfg.log_format == "json") {
    spdlog::info("{}", listening); // every line a JSON object
  } else {
    std::printf("%s\n", listening.c_str());
    std::fflush(stdout);
  }
  if (!ready_file.empty()) {
    auto tmp = ready_file + ".tmp";
    std::ofstream{tmp} << n.port() << " " << n.metrics_port() << " " << n.worker_id()
                       << "\n";
    std::rename(tmp.c_str(), ready_file.c_str());
  }
  int sig = wait_for_stop_signal();
  spdlog::info("signal {}: shutting down", sig);
  n.stop();
  spdlog::info("stopped");
  return 0;
}

int run_node(int argc, char** argv, worker_registry workers, type_registrar extra_types) {
  // The deploy scripts run `$FERRY_BIN node ...`: drop that word.
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::strcmp(args[1], "node") == 0)
    args.erase(args.begin() + 1);
  node_config cfg;
  cfg.map_arena_at_start = true; // a serving node, as `ferry node`
  std::string ready_file;
  CLI::App app{"A ferry node serving this program's worker types"};
  app.set_config("--config", "", "INI or TOML file with option values");
  // A key the file misspells is an error, never silently lost.
  app.allow_config_extras(CLI::config_extras_mode::error);
  add_node_options(app, cfg);
  app.add_option("--ready-file", ready_file,
                 "Write 'PORT METRICS_PORT WORKER_ID' here once listening");
  app.set_version_flag("--version", version_text());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return serve_node(cfg, ready_file, std::move(workers), std::move(extra_types));
}

} // namespace ferry
