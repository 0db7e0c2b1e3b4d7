#include "tests/cluster/test_peer_main.hpp"

#include <CLI/CLI.hpp>

#include "runtime/node_options.hpp"
#include "runtime/run_node.hpp"

namespace ferry::test {

int run_test_peer(int argc, char** argv, const char* description,
                  const std::function<bool(node&)>& bind) {
  node_config cfg;
  std::string ready_file;
  CLI::App app{description};
  add_node_options(app, cfg);
  app.add_option("--ready-file", ready_file);
  CLI11_PARSE(app, argc, argv);
  return serve_node(cfg, ready_file, {}, {}, bind);
}

} // namespace ferry::test
