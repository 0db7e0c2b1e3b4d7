// node_link: the driver's handle on one soak node process (one incarnation:
// a restart makes a new link). Starts `ferry soak-node ...`, waits for its
// "ready PORT WORKER_ID", then routes the answers it prints to the
// commands that wait for them, by id, so many commands can wait at once.
// Owns: the child process (killed when the link goes) and the router thread.
// Must never: wait without a bound; read the child's output but on the
// router thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "process/child_process.hpp"

namespace ferry::soak {

/// How a command ended.
struct node_answer {
  enum class kind { ok, fail, mismatch, lost, hung };
  kind how = kind::lost;
  std::string text;               // after "ok" / "fail" / "mismatch", or why lost
  std::vector<std::string> words; // text split at spaces
  bool ok() const { return how == kind::ok; }
};

class node_link {
public:
  node_link() = default;
  ~node_link();
  node_link(const node_link&) = delete;
  node_link& operator=(const node_link&) = delete;

  /// Starts the process (`args` after the program, `env` added, stderr to
  /// `log_path`) and waits up to `limit` for it to be ready. Empty or why not.
  std::string start(const std::vector<std::string>& args, const std::vector<std::string>& env,
                    const std::string& log_path, std::chrono::milliseconds limit);

  /// Sends `command` and waits up to `limit` for its answer: lost when the
  /// process ended first, hung when it is alive but silent.
  node_answer ask(const std::string& command, std::chrono::milliseconds limit);

  void signal(int sig);
  /// Its wait status once it exited within `limit` (then reaped).
  std::optional<int> wait_exit(std::chrono::milliseconds limit);
  /// SIGKILL, reaped.
  void kill_now();

  /// True once the process closed its output (it exited).
  bool ended();
  int pid() const { return pid_; }
  uint16_t port() const { return port_; }
  uint64_t worker_id() const { return worker_id_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  /// How much of a log's end a report shows.
  static constexpr size_t shown_log_chars = 2000;
  /// Its stderr's last `max_chars` characters.
  std::string log_tail(size_t max_chars = shown_log_chars) const;

private:
  void route();

  process::child_process child_;
  std::thread router_;
  int pid_ = -1;
  uint16_t port_ = 0;
  uint64_t worker_id_ = 0;
  std::string log_path_;

  std::mutex mtx_;
  std::condition_variable changed_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::optional<std::string>> pending_; // id -> answer
  bool ended_ = false;
  bool stopping_ = false;
};

} // namespace ferry::soak
