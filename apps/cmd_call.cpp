// `ferry call`: calls a named handler on a node with a file as its payload,
// and writes the reply's payload to a file or prints a summary. Every node
// has ferry.echo and ferry.checksum (runtime/builtin_handlers.hpp), so this
// checks a node and its data path from a shell. A payload above the staging
// threshold goes by handle, as from any other caller.
#include <chrono>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/client_session.hpp"
#include "apps/commands.hpp"
#include "apps/file_io.hpp"
#include "protocol/errors.hpp"
#include "protocol/checksum.hpp"
#include "runtime/logging.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct call_command {
  node_config cfg;
  std::string node_endpoint;
  std::string handler;
  uint64_t timeout_ms = 0;
  std::string output;
  bool json = false;
  std::string file;
};

void run_call(const call_command& cmd) {
  init_logging(cmd.cfg.log_level, "call", cmd.cfg.log_format);
  auto payload = read_file("call", cmd.file);
  auto sent = payload.size();
  auto sent_sum = checksum64(payload.data(), payload.size());
  auto session = client_session::open(cmd.cfg, cmd.node_endpoint);
  if (!session)
    fail("call", describe(session.error()));
  auto& s = **session;
  messenger_client m{s.local()};
  auto t0 = std::chrono::steady_clock::now();
  auto reply = m.call(s.remote_hello().worker_id, cmd.handler, std::move(payload), {},
                      std::chrono::milliseconds{cmd.timeout_ms});
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count();
  if (!reply)
    fail("call", cmd.handler + " on " + cmd.node_endpoint + ": "
                   + describe(reply.error()));
  if (!cmd.output.empty())
    write_file("call", cmd.output, reply->payload);
  auto reply_sum = checksum64(reply->payload.data(), reply->payload.size());
  if (cmd.json) {
    nlohmann::json j{{"node", cmd.node_endpoint},
                     {"handler", cmd.handler},
                     {"sent_bytes", sent},
                     {"sent_checksum", checksum_text(sent_sum)},
                     {"reply_bytes", reply->payload.size()},
                     {"reply_checksum", checksum_text(reply_sum)},
                     {"headers", reply->hdrs},
                     {"seconds", secs}};
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s on %s: sent %zu bytes (checksum %s), reply %zu bytes (checksum %s) "
              "in %.3f s\n",
              cmd.handler.c_str(), cmd.node_endpoint.c_str(), sent,
              checksum_text(sent_sum).c_str(), reply->payload.size(), checksum_text(reply_sum).c_str(),
              secs);
  for (auto& [k, v] : reply->hdrs)
    std::printf("  %s: %s\n", k.c_str(), v.c_str());
}

} // namespace

void add_call_command(CLI::App& root) {
  auto cmd = std::make_shared<call_command>();
  cmd->cfg.log_level = "warn"; // a client command prints its own summary
  // The payload is staged transparently, which never maps an arena: one
  // mapped at start lets a large payload take the RDMA path.
  cmd->cfg.map_arena_at_start = true;
  auto* sub = root.add_subcommand(
    "call", "Call a named handler on a node with a file as payload "
            "(built-in: ferry.echo, ferry.checksum)");
  add_client_options(*sub, cmd->cfg);
  sub->add_option("--node", cmd->node_endpoint, "HOST:PORT of the node")->required();
  sub->add_option("--handler", cmd->handler, "The handler's name")->required();
  sub->add_option("--timeout-ms", cmd->timeout_ms,
                  "The call's timeout (0: none of its own; the transfer timeout "
                  "still bounds it)")
    ->capture_default_str();
  sub->add_option("-o,--output", cmd->output, "Write the reply's payload here");
  sub->add_flag("--json", cmd->json, "Print the summary as JSON");
  sub->add_option("file", cmd->file, "The payload (a file)")->required();
  sub->callback([cmd] { run_call(*cmd); });
}

} // namespace ferry::app
