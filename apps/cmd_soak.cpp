// `ferry soak`: node processes under seeded mixed traffic and faults for a
// duration or an operation count, then the checks (soak/soak_run.hpp).
// `ferry soak-node` (hidden): one node of the run, started by `ferry soak`.
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "apps/commands.hpp"
#include "runtime/node_options.hpp"
#include "soak/soak_node.hpp"
#include "soak/soak_run.hpp"

namespace ferry::app {

namespace {

struct soak_command {
  soak::soak_options opts;
  uint64_t duration_s = 60;
  uint64_t fault_interval_ms = 6000;
};

struct soak_node_command {
  node_config cfg;
  soak::node_test_hooks hooks;
};

} // namespace

void add_soak_command(CLI::App& root) {
  auto cmd = std::make_shared<soak_command>();
  auto* sub = root.add_subcommand(
    "soak", "Run node processes under seeded traffic and faults, then check nothing was "
            "lost or leaked");
  auto& o = cmd->opts;
  sub->add_option("--seed", o.seed, "Seed of the traffic and the fault plan (0: from the clock)")
    ->capture_default_str();
  sub->add_option("--nodes", o.nodes, "Node processes")
    ->check(CLI::Range(2, 16))
    ->capture_default_str();
  sub->add_option("--duration", cmd->duration_s, "Seconds of traffic (e.g. 60, 30m is 1800)")
    ->transform(CLI::AsNumberWithUnit(std::map<std::string, uint64_t>{{"s", 1}, {"m", 60}, {"h", 3600}}))
    ->capture_default_str();
  sub->add_option("--operations", o.operations,
                  "Stop after this many operations (0: run for the duration)")
    ->capture_default_str();
  sub->add_option("--max-size", o.max_size, "The largest payload in bytes (4 KiB to 256 MiB)")
    ->transform(CLI::AsSizeValue(false))
    ->check(CLI::Range(uint64_t{4096}, uint64_t{256} << 20))
    ->capture_default_str();
  sub->add_option("--concurrency", o.concurrency, "Operations in flight")
    ->check(CLI::Range(1, 32))
    ->capture_default_str();
  sub->add_option("--fault-interval-ms", cmd->fault_interval_ms,
                  "A fault about this often (0: no faults)")
    ->capture_default_str();
  sub->add_option("--max-rss-slope", o.max_rss_slope,
                  "MiB per minute a node's memory may grow over a long run")
    ->capture_default_str();
  sub->add_flag("--json", o.json, "Print the report as JSON");
  sub->add_option("--log-dir", o.log_dir, "Where the nodes' logs go (default: a new /tmp dir)");
  auto* corrupt = sub->add_option("--test-corrupt-node", o.test_corrupt_node,
                                  "Test: this node flips a byte of every payload it gets");
  auto* leak = sub->add_option("--test-leak-node", o.test_leak_node,
                               "Test: this node stages one payload nobody asked for");
  corrupt->group("");
  leak->group("");
  sub->callback([cmd] {
    auto opts = cmd->opts;
    opts.duration = std::chrono::seconds{cmd->duration_s};
    opts.fault_interval = std::chrono::milliseconds{cmd->fault_interval_ms};
    if (int rc = soak::run_soak(opts); rc != 0)
      throw CLI::RuntimeError(rc);
  });

  auto node = std::make_shared<soak_node_command>();
  auto* n = root.add_subcommand("soak-node", "One node of a soak run");
  n->group(""); // hidden: started by `ferry soak` itself
  add_node_options(*n, node->cfg);
  n->add_flag("--test-corrupt-gets", node->hooks.corrupt_gets,
              "Flip a byte of every payload this node gets");
  n->add_flag("--test-leak-slot", node->hooks.leak_slot,
              "Stage one payload nobody asked for");
  n->callback([node] {
    if (int rc = soak::run_soak_node(node->cfg, node->hooks); rc != 0)
      throw CLI::RuntimeError(rc);
  });
}

} // namespace ferry::app
