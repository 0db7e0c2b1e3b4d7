// `ferry probe`: checks the data path between two nodes without moving the
// bytes to the shell. Node B (--via) pulls a handle from node A (--node) as
// a consumer, detaches (the payload stays staged), and reports the path and
// reason taken, the bytes, the time and the checksum.
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "apps/client_session.hpp"
#include "apps/commands.hpp"
#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct probe_command {
  node_config cfg;
  std::string owner_endpoint;
  std::string via_endpoint;
  std::string handle_text;
  bool json = false;
};

void run_probe(const probe_command& cmd) {
  init_logging(cmd.cfg.log_level, "probe", cmd.cfg.log_format);
  auto h = handle_argument("probe", cmd.handle_text);
  auto session = client_session::open(cmd.cfg, cmd.owner_endpoint);
  if (!session)
    fail("probe", describe(session.error()));
  auto& s = **session;
  auto owner_id = s.remote_hello().worker_id;
  if (h.hi != owner_id) {
    char want[17];
    std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(owner_id));
    fail("probe", "the handle " + cmd.handle_text + " is not owned by the node at "
                    + cmd.owner_endpoint + " (its worker id is " + want + ")", 2);
  }
  auto via = s.local().connect(cmd.via_endpoint);
  if (!via)
    fail("probe", describe(via.error()));
  caf::scoped_actor self{s.local().system()};
  std::string report;
  caf::error err;
  auto bound = cmd.cfg.transfer_timeout() + 2 * cmd.cfg.request_timeout();
  self->request(caf::actor_cast<gateway_actor>(via->gateway), bound, path_probe_atom::value, h)
    .receive([&](std::string& r) { report = std::move(r); },
             [&](caf::error& e) { err = std::move(e); });
  if (err) {
    auto why = describe(err);
    if (is(err, errc::unknown_owner))
      why += " (is " + cmd.via_endpoint + " a member of " + cmd.owner_endpoint
             + "'s cluster? join them with --join)";
    fail("probe", "the pull on " + cmd.via_endpoint + " failed: " + why);
  }
  auto j = nlohmann::json::parse(report);
  j["owner"] = cmd.owner_endpoint;
  j["via"] = cmd.via_endpoint;
  if (cmd.json) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  auto bytes = j.at("bytes").get<double>();
  auto secs = j.at("seconds").get<double>();
  std::printf("%s pulled %s from %s: path %s (%s), %.0f bytes in %.3f ms (%.1f MiB/s), "
              "checksum %s; the payload stays staged\n",
              cmd.via_endpoint.c_str(), cmd.handle_text.c_str(), cmd.owner_endpoint.c_str(),
              j.at("path").get<std::string>().c_str(),
              j.at("reason").get<std::string>().c_str(), bytes, secs * 1e3,
              secs > 0 ? bytes / (1 << 20) / secs : 0.0,
              j.at("checksum").get<std::string>().c_str());
}

} // namespace

void add_probe_command(CLI::App& root) {
  auto cmd = std::make_shared<probe_command>();
  cmd->cfg.log_level = "warn"; // a client command prints its own report
  auto* sub = root.add_subcommand(
    "probe", "Check the data path between two nodes: one pulls a handle from the other");
  add_client_options(*sub, cmd->cfg);
  sub->add_option("--node", cmd->owner_endpoint, "HOST:PORT of the handle's owner node (A)")
    ->required();
  sub->add_option("--via", cmd->via_endpoint,
                  "HOST:PORT of the node that pulls it as a consumer (B)")
    ->required();
  sub->add_option("--handle", cmd->handle_text, "The handle (from ferry put)")->required();
  sub->add_flag("--json", cmd->json, "One JSON object instead of a sentence");
  sub->callback([cmd] { run_probe(*cmd); });
}

} // namespace ferry::app
