// `ferry stat`: what a node holds (slots, staged bytes, leases) and whom it
// knows, human-readable or as JSON.
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/client_session.hpp"
#include "apps/commands.hpp"
#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node_options.hpp"

namespace ferry::app {

namespace {

struct stat_command {
  node_config cfg;
  std::string node_endpoint;
  bool json = false;
};

void print_human(const nlohmann::json& j) {
  const auto& o = j.at("owner");
  std::printf("node %016llx at %s:%u (incarnation %016llx)\n",
              j.at("worker_id").get<unsigned long long>(),
              j.at("host").get<std::string>().c_str(),
              j.at("port").get<unsigned>(),
              j.at("incarnation").get<unsigned long long>());
  std::printf("  slots         %llu\n", o.at("slots").get<unsigned long long>());
  std::printf("  staged bytes  %llu (%.1f MiB)\n",
              o.at("staged_bytes").get<unsigned long long>(),
              o.at("staged_bytes").get<double>() / (1 << 20));
  std::printf("  leases        %llu\n", o.at("leases").get<unsigned long long>());
  std::printf("  workers       %llu\n", j.at("workers").get<unsigned long long>());
  if (auto s = j.find("staging"); s != j.end()) {
    if (s->value("available", false)) {
      const auto& c = s->at("chunks");
      std::printf("  GPU staging   %s, %llu x %llu MiB chunks (%s): %llu active, %llu idle, "
                  "%llu retained\n",
                  s->at("backend").get<std::string>().c_str(),
                  s->at("chunk_count").get<unsigned long long>(),
                  s->at("chunk_size").get<unsigned long long>() >> 20,
                  s->at("location").get<std::string>().c_str(),
                  c.at("active").get<unsigned long long>(),
                  c.at("idle").get<unsigned long long>(),
                  c.at("retained").get<unsigned long long>());
    } else {
      std::printf("  GPU staging   off: %s\n",
                  s->value("unavailable_reason", std::string{"unknown"}).c_str());
    }
  }
  // Members listen (a port); clients (ferry put/get/job) do not.
  const auto& peers = j.at("peers");
  size_t members = 0;
  for (const auto& p : peers)
    members += p.at("port").get<unsigned>() != 0 ? 1 : 0;
  std::printf("  members       %zu\n", members);
  for (const auto& p : peers)
    if (p.at("port").get<unsigned>() != 0)
      std::printf("    %016llx  %s:%u\n", p.at("worker_id").get<unsigned long long>(),
                  p.at("host").get<std::string>().c_str(), p.at("port").get<unsigned>());
  if (members < peers.size())
    std::printf("  clients       %zu\n", peers.size() - members);
}

void run_stat(const stat_command& cmd) {
  init_logging(cmd.cfg.log_level, "stat", cmd.cfg.log_format);
  auto session = client_session::open(cmd.cfg, cmd.node_endpoint);
  if (!session)
    fail("stat", describe(session.error()));
  auto text = (*session)->client().stat((*session)->remote());
  if (!text)
    fail("stat", describe(text.error()));
  auto j = nlohmann::json::parse(*text);
  // The node lists this short-lived client among its peers; leave it out.
  auto self_id = (*session)->local().worker_id();
  auto& peers = j["peers"];
  for (auto i = peers.begin(); i != peers.end();) {
    if (i->at("worker_id").get<uint64_t>() == self_id)
      i = peers.erase(i);
    else
      ++i;
  }
  if (cmd.json)
    std::printf("%s\n", j.dump(2).c_str());
  else
    print_human(j);
}

} // namespace

void add_stat_command(CLI::App& root) {
  auto cmd = std::make_shared<stat_command>();
  cmd->cfg.log_level = "warn"; // a client command prints its own progress
  auto* sub = root.add_subcommand("stat", "Show what a node holds");
  add_client_options(*sub, cmd->cfg);
  sub->add_option("--node", cmd->node_endpoint, "HOST:PORT of the node")
    ->required();
  sub->add_flag("--json", cmd->json, "Print JSON for scripts");
  sub->callback([cmd] { run_stat(*cmd); });
}

} // namespace ferry::app
