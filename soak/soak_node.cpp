#include "soak/soak_node.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

#include "protocol/errors.hpp"
#include "runtime/logging.hpp"
#include "runtime/node.hpp"
#include "runtime/run_node.hpp"
#include "soak/node_commands.hpp"

namespace ferry::soak {

namespace {

// Commands run at once; one more is answered "fail busy" (the driver keeps
// far fewer in flight).
constexpr int max_running = 64;

std::mutex say_mtx;

void say(const std::string& line) {
  std::lock_guard<std::mutex> guard{say_mtx};
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

/// Reads commands until stdin ends, each on its own thread; then asks this
/// process to stop (SIGTERM, taken by the main thread's sigwait).
void serve_commands(node& n, const node_test_hooks& hooks, std::atomic<int>& running) {
  std::string line;
  while (std::getline(std::cin, line)) {
    auto space = line.find(' ');
    auto id = line.substr(0, space);
    auto command = space == std::string::npos ? std::string{} : line.substr(space + 1);
    if (running.fetch_add(1) >= max_running) {
      running.fetch_sub(1);
      say(id + " fail busy");
      continue;
    }
    std::thread{[&n, &hooks, &running, id, command] {
      auto answer = run_node_command(n, command, hooks);
      say(id + " " + answer);
      running.fetch_sub(1);
    }}.detach();
  }
  ::kill(::getpid(), SIGTERM);
}

} // namespace

int run_soak_node(const node_config& cfg, const node_test_hooks& hooks) {
  if (auto err = init_logging(cfg.log_level, "soak-node", cfg.log_format)) {
    say("error " + describe(err));
    return 2;
  }
  // Every thread inherits the blocked stop signals; the main thread takes
  // them.
  block_stop_signals();

  // Never destroyed: command threads may still hold it when the process
  // exits (std::_Exit after the node's own shutdown).
  auto* n = new node{cfg};
  if (auto err = n->start()) {
    say("error " + describe(err));
    return 1;
  }
  if (auto err = bind_soak_handlers(*n); !err.empty()) {
    say("error " + err);
    return 1;
  }
  static std::atomic<int> running{0};
  static node_test_hooks kept_hooks;
  kept_hooks = hooks;
  say("ready " + std::to_string(n->port()) + " " + std::to_string(n->worker_id()));
  std::thread{[n] { serve_commands(*n, kept_hooks, running); }}.detach();
  wait_for_stop_signal();
  refuse_node_calls(); // in-flight commands end at their next step
  n->stop();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(0);
}

} // namespace ferry::soak
