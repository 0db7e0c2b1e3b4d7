// `ferry get`: pulls a payload by handle into a file, then releases it.
#include <chrono>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "apps/client_session.hpp"
#include "apps/commands.hpp"
#include "apps/file_io.hpp"
#include "protocol/errors.hpp"
#include "protocol/checksum.hpp"
#include "runtime/logging.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct get_command {
  node_config cfg;
  std::string node_endpoint;
  std::string handle_text;
  std::string output;
  bool keep = false;
};

void run_get(const get_command& cmd) {
  init_logging(cmd.cfg.log_level, "get", cmd.cfg.log_format);
  auto h = handle_argument("get", cmd.handle_text);
  auto session = client_session::open(cmd.cfg, cmd.node_endpoint);
  if (!session)
    fail("get", describe(session.error()));
  auto& s = **session;
  auto t0 = std::chrono::steady_clock::now();
  auto got = s.client().get(h);
  if (!got)
    fail("get", describe(got.error()));
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count();
  write_file("get", cmd.output, got->bytes);
  caf::error end;
  if (cmd.keep) {
    end = s.client().detach(h, got->lease_id);
  } else if (auto released = s.client().release(h, got->lease_id); !released) {
    end = released.error();
  }
  if (end)
    fail("get", "wrote " + cmd.output + " but could not end the lease: "
                  + describe(end));
  std::fprintf(stderr,
               "ferry get: %zu bytes in %.3f s (%.1f MiB/s), checksum %016llx, "
               "%s\n",
               got->bytes.size(), secs,
               secs > 0 ? static_cast<double>(got->bytes.size()) / (1 << 20) / secs
                        : 0.0,
               static_cast<unsigned long long>(
                 checksum64(got->bytes.data(), got->bytes.size())),
               cmd.keep ? "handle kept" : "released");
}

} // namespace

void add_get_command(CLI::App& root) {
  auto cmd = std::make_shared<get_command>();
  cmd->cfg.log_level = "warn"; // a client command prints its own progress
  auto* sub = root.add_subcommand("get", "Pull a payload by handle into a file");
  add_client_options(*sub, cmd->cfg);
  sub->add_option("--node", cmd->node_endpoint,
                  "HOST:PORT of the handle's owner node")
    ->required();
  sub->add_option("--handle", cmd->handle_text, "The handle (from ferry put)")
    ->required();
  sub->add_option("-o,--output", cmd->output, "Where to write the bytes")
    ->required();
  sub->add_flag("--keep", cmd->keep,
                "Detach instead of release: the payload stays staged");
  sub->callback([cmd] { run_get(*cmd); });
}

} // namespace ferry::app
