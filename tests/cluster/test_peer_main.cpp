#include "tests/cluster/test_peer_main.hpp"

#include <csignal>
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>

#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node.hpp"
#include "runtime/node_options.hpp"

namespace ferry::test {

int run_test_peer(int argc, char** argv, const char* description,
                  const std::function<bool(node&)>& bind) {
  node_config cfg;
  std::string ready_file;
  CLI::App app{description};
  add_node_options(app, cfg);
  app.add_option("--ready-file", ready_file);
  CLI11_PARSE(app, argc, argv);
  init_logging(cfg.log_level, "peer");
  // Blocked before the node starts its threads, so only sigwait sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  node n{cfg};
  if (auto err = n.start()) {
    std::fprintf(stderr, "start: %s\n", describe(err).c_str());
    return 1;
  }
  if (!bind(n))
    return 1;
  if (!ready_file.empty()) {
    std::ofstream{ready_file + ".tmp"} << n.port() << " " << n.metrics_port() << " "
                                       << n.worker_id() << "\n";
    std::rename((ready_file + ".tmp").c_str(), ready_file.c_str());
  }
  int sig = 0;
  sigwait(&stop, &sig);
  n.stop();
  return 0;
}

} // namespace ferry::test
