// `ferry put`: stages a file's bytes on a node and prints the handle.
// The bytes travel by rendezvous: this process stages them locally and the
// node pulls them (adopt), so a large file never rides in one message.
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "apps/client_session.hpp"
#include "apps/commands.hpp"
#include "apps/file_io.hpp"
#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct put_command {
  node_config cfg;
  std::string node_endpoint;
  std::string file;
  bool pinned = false;
};

void run_put(const put_command& cmd) {
  init_logging(cmd.cfg.log_level, "put", cmd.cfg.log_format);
  auto bytes = read_file("put", cmd.file);
  auto size = bytes.size();
  auto session = client_session::open(cmd.cfg, cmd.node_endpoint);
  if (!session)
    fail("put", describe(session.error()));
  auto& s = **session;
  auto local = s.client().register_data(std::move(bytes));
  if (!local)
    fail("put", describe(local.error()));
  auto remote = s.client().adopt(s.remote(), *local, cmd.pinned);
  if (!remote)
    fail("put", describe(remote.error()));
  std::fprintf(stderr, "ferry put: staged %zu bytes on %s\n", size,
               cmd.node_endpoint.c_str());
  std::printf("%s\n", to_string(*remote).c_str());
  std::fflush(stdout);
}

} // namespace

void add_put_command(CLI::App& root) {
  auto cmd = std::make_shared<put_command>();
  cmd->cfg.log_level = "warn"; // a client command prints its own progress
  auto* sub = root.add_subcommand("put", "Stage a file on a node; print its handle");
  add_client_options(*sub, cmd->cfg);
  sub->add_option("--node", cmd->node_endpoint, "HOST:PORT of the node")
    ->required();
  sub->add_option("file", cmd->file, "File to stage")->required();
  sub->add_flag("--pinned", cmd->pinned,
                "Stage in registered memory (the RDMA path)");
  sub->callback([cmd] { run_put(*cmd); });
}

} // namespace ferry::app
