// `ferry bench`: measures every path against its limit on this machine and
// reports a table (while it runs and at the end), JSON and plots.
// `ferry bench-peer` (hidden): the far side of a two-process scenario,
// started by `ferry bench` itself.
#include <csignal>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "bench/bench_options.hpp"
#include "bench/harness.hpp"
#include "bench/machine_info.hpp"
#include "bench/peer_roles.hpp"
#include "bench/plots.hpp"
#include "bench/report_json.hpp"
#include "bench/report_table.hpp"
#include "bench/scenario_table.hpp"
#include "bench/targets.hpp"
#include "apps/commands.hpp"
#include "runtime/logging.hpp"

namespace ferry::app {

namespace {

struct bench_command {
  bool quick = false;
  bool list = false;
  std::string json_path;
  std::string plot_dir;
  std::vector<std::string> only;
  std::vector<std::string> sizes;
  std::vector<std::string> concurrency_sizes;
  std::vector<int> consumers;
  int warmup = -1;
  int repeats = -1;
  bench::ferry_knobs knobs;
};

void list_scenarios() {
  for (const auto& e : bench::scenario_table()) {
    std::printf("%-26s %s\n", e.name.c_str(), e.what.c_str());
    std::printf("%-26s   limited by: %s\n", "", e.limit.c_str());
    if (!e.make)
      std::printf("%-26s   skipped: needs %s\n", "", e.needs.c_str());
  }
}

std::vector<uint64_t> parse_sizes(const std::vector<std::string>& texts) {
  std::vector<uint64_t> out;
  for (const auto& t : texts) {
    auto n = bench::parse_size(t);
    if (n == 0)
      fail("bench", "'" + t + "' is not a size (e.g. 4K, 64M, 1G)", 2);
    out.push_back(n);
  }
  return out;
}

bench::bench_options options_of(const bench_command& cmd) {
  auto o = bench::default_options(cmd.quick);
  o.json_path = cmd.json_path;
  o.plot_dir = cmd.plot_dir;
  o.only = cmd.only;
  if (!cmd.sizes.empty())
    o.sizes = parse_sizes(cmd.sizes);
  if (!cmd.concurrency_sizes.empty())
    o.concurrency_sizes = parse_sizes(cmd.concurrency_sizes);
  if (!cmd.consumers.empty())
    o.consumer_counts = cmd.consumers;
  if (cmd.warmup >= 0) {
    o.warmup = cmd.warmup;
    o.min_warmup_s = 0;
  }
  if (cmd.repeats > 0) {
    o.repeats = cmd.repeats;
    o.min_timed_s = 0;
    o.cold_repeats = cmd.repeats;
  }
  o.knobs = cmd.knobs;
  return o;
}

void run_bench_command(const bench_command& cmd) {
  if (cmd.list) {
    list_scenarios();
    return;
  }
  init_logging("warn", "bench");
  // A peer that dies mid-command must not take the bench with it.
  std::signal(SIGPIPE, SIG_IGN);
  auto opts = options_of(cmd);
  for (const auto& want : opts.only) {
    bench::bench_options probe;
    probe.only = {want};
    bool known = false;
    for (const auto& e : bench::scenario_table())
      known = known || bench::selected(probe, e.name);
    if (!known)
      fail("bench", "no scenario matches '" + want + "' (see --list)", 2);
  }
  auto machine = bench::describe_machine();
  std::printf("ferry bench%s: %s, %d cores, %s; load %.2f\n",
              opts.quick ? " --quick" : "",
              machine.value("cpu", std::string{"?"}).c_str(),
              machine.value("cores", 0), machine.value("kernel", std::string{"?"}).c_str(),
              bench::load_average());
  bench::print_header(stdout);
  bench::bench_observer obs;
  obs.on_point = [](const bench::point_result& p) { bench::print_point(stdout, p); };
  obs.on_skipped = [](const bench::skipped_scenario& s) {
    bench::print_skipped(stdout, s);
  };
  auto report = bench::run_bench(opts, bench::scenario_table(), obs);
  machine["load_average_1m_end"] = bench::load_average();
  bench::print_table(stdout, report);
  bench::print_limit_ratios(stdout, report);
  auto targets = bench::check_targets(report);
  bench::print_targets(stdout, targets);
  std::printf("\nwall time %.1f s\n", report.wall_seconds);
  std::fflush(stdout);
  if (!opts.json_path.empty()) {
    auto doc = bench::report_json(opts, machine, report, targets);
    if (auto err = bench::write_json(opts.json_path, doc); !err.empty())
      fail("bench", err);
  }
  if (!opts.plot_dir.empty()) {
    auto title = std::string{"ferry bench"} + (opts.quick ? " --quick" : "") + ", "
                 + machine.value("cpu", std::string{"?"});
    if (auto err = bench::write_plots(opts.plot_dir, report, title); !err.empty())
      std::fprintf(stderr, "ferry bench: plots: %s\n", err.c_str());
  }
  if (report.failed())
    fail("bench", "some points failed (see FAILED above)");
}

void add_knob_options(CLI::App& sub, bench::ferry_knobs& k) {
  sub.add_option("--chunk-size", k.chunk_size,
                 "Chunk size of the ferry rows (0: the node default)");
  sub.add_option("--scheduler-policy", k.scheduler_policy,
                 "CAF scheduler policy of the ferry rows (sharing, stealing)");
  sub.add_option("--scheduler-threads", k.scheduler_threads,
                 "CAF scheduler threads of the ferry rows (0: default)");
  sub.add_flag("--chunked-ucx", k.chunked_ucx,
               "The chunked rows with UCX on both nodes and the RDMA path off: "
               "their calls take the control channel (FERRY_CONTROL_CHANNEL=caf: CAF requests)");
}

} // namespace

void add_bench_command(CLI::App& root) {
  auto cmd = std::make_shared<bench_command>();
  auto* sub = root.add_subcommand(
    "bench", "Measure every transfer path against its limit on this machine");
  sub->add_flag("--quick", cmd->quick,
                "CI run: 4 KiB, 4 MiB, 16 MiB and 64 MiB, fewer repeats");
  sub->add_option("--json", cmd->json_path, "Write the results as JSON to FILE");
  sub->add_option("--plot", cmd->plot_dir,
                  "Draw throughput and latency plots (PNG, gnuplot) into DIR");
  sub->add_option("--scenarios", cmd->only,
                  "Only these scenarios (comma-separated; 'ferry_*' matches a prefix)")
    ->delimiter(',');
  sub->add_option("--sizes", cmd->sizes, "Payload sizes (e.g. 4K,1M,64M)")
    ->delimiter(',');
  sub->add_option("--concurrency-sizes", cmd->concurrency_sizes,
                  "Per-consumer sizes of the concurrency rows")
    ->delimiter(',');
  sub->add_option("--consumers", cmd->consumers,
                  "Consumer counts of the concurrency rows (default 1,4,16)")
    ->delimiter(',');
  sub->add_option("--warmup", cmd->warmup, "Untimed runs per point");
  sub->add_option("--repeats", cmd->repeats, "Timed runs per point");
  sub->add_option("--pull-window", cmd->knobs.pull_window,
                  "Chunk pulls in flight per get (0: the node default)");
  sub->add_option("--eager-max", cmd->knobs.consumer_eager_max,
                  "The consumers' --eager-max on the chunked rows (-1: the node "
                  "default; 0: every small get pulls its chunk)");
  add_knob_options(*sub, cmd->knobs);
  sub->add_flag("--list", cmd->list, "List the scenarios and exit");
  sub->callback([cmd] { run_bench_command(*cmd); });

  auto peer = std::make_shared<bench::peer_options>();
  auto* p = root.add_subcommand("bench-peer", "The far side of a bench scenario");
  p->group(""); // hidden: started by `ferry bench` itself
  p->add_option("--role", peer->role, "tcp, ucx, caf or ferry-owner")->required();
  p->add_option("--region-bytes", peer->region_bytes, "ucx: bytes to register");
  p->add_flag("--ucx-allocate", peer->ucx_allocate,
              "ucx: let UCX allocate the region where shared memory allows");
  p->add_flag("--am-echo", peer->am_echo, "ucx: answer active-message pings");
  add_knob_options(*p, peer->knobs);
  p->add_flag("--rdma", peer->rdma, "ferry-owner: with the UCX transport");
  p->add_flag("--eager-endpoints", peer->knobs.eager_endpoints,
              "ferry-owner: wire up UCX endpoints at the hello");
  p->add_flag("--caf-control", peer->knobs.caf_control,
              "ferry-owner: rendezvous calls by CAF requests, not the control channel");
  p->callback([peer] {
    if (int rc = bench::run_peer(*peer); rc != 0)
      throw CLI::RuntimeError(rc);
  });
}

} // namespace ferry::app
