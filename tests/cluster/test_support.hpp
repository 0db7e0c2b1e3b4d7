// Support for multi-process tests: `ferry node` child processes, running the
// `ferry` command, scraping a Prometheus endpoint over HTTP, reading a
// node's metric registry, and test payloads with checksums.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "protocol/byte_buffer.hpp"

namespace prometheus {
class Registry;
}

namespace ferry::test {

/// Path of the ferry binary (FERRY_BIN, set by ctest).
std::string ferry_bin();

/// A `ferry node` in its own process, on 127.0.0.1 and a free port.
class node_process {
public:
  /// `env` entries ("NAME=value") are added to this process's environment.
  /// `program`: another program that takes ferry node's options (a test
  /// peer); default: `ferry node`.
  explicit node_process(std::vector<std::string> extra_args = {},
                        std::vector<std::string> env = {}, std::string program = {});
  ~node_process();

  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  uint16_t port() const { return port_; }
  uint16_t metrics_port() const { return metrics_port_; }
  uint64_t worker_id() const { return worker_id_; }
  std::string endpoint() const;
  pid_t pid() const { return pid_; }

  /// Sends `sig`; SIGKILL also reaps the process.
  void kill(int sig);

  /// freeze_process() on this node; thaw() sends SIGCONT.
  bool freeze();
  void thaw();

  /// Sends SIGTERM and waits for a clean exit; returns the exit status.
  int stop();

  /// The process's stdout and stderr so far.
  std::string log() const;

private:
  std::string dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  uint16_t metrics_port_ = 0;
  uint64_t worker_id_ = 0;
};

/// SIGSTOP, then waits (at most 5 s) until every thread of `pid` has
/// stopped: a stop begins only when the thread the kernel picked runs, and
/// until then, on busy cores, another thread may still answer a message.
/// False if some thread did not stop in time (the process is then sent
/// SIGCONT) or the signal could not be sent.
bool freeze_process(pid_t pid);

struct command_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `ferry args...` to completion (bounded by `timeout`).
command_result run_ferry(const std::vector<std::string>& args,
                         std::chrono::seconds timeout = std::chrono::seconds{120},
                         std::vector<std::string> env = {});

/// Starts `ferry args...` without waiting (for tests that kill it); the
/// path of its stderr file goes to `err_path` when given.
pid_t start_ferry(const std::vector<std::string>& args,
                  std::vector<std::string> env = {}, std::string* err_path = nullptr);

struct http_reply {
  int status = 0;   // 0: no answer
  std::string body; // after the headers
  std::string raw;  // the whole response
};

/// GET http://127.0.0.1:port/path (HTTP/1.0, 10 s bound).
http_reply http_get(uint16_t port, const std::string& path);

/// The worker ids of the listening members `n` lists (`ferry stat --json`,
/// with `extra_args` such as TLS files); none when it did not answer.
std::optional<std::set<uint64_t>> listed_members(const node_process& n,
                                                 const std::vector<std::string>& extra_args = {});
/// The same for the node listening at `endpoint` (HOST:PORT).
std::optional<std::set<uint64_t>> listed_members(const std::string& endpoint,
                                                 const std::vector<std::string>& extra_args = {});

/// GET http://127.0.0.1:port/metrics (the whole response).
std::string scrape_metrics(uint16_t port);

/// The value of one series line in Prometheus text (`name{labels}`), or -1.
double series_value(const std::string& text, const std::string& series);

/// The sum of a series' values in a registry, over all label sets.
double registry_value(prometheus::Registry& registry, const std::string& name);

/// The same over the label sets with `label` = `value` only.
double registry_value(prometheus::Registry& registry, const std::string& name,
                      const std::string& label, const std::string& value);

/// Whether this run's nodes take the control channel (the default, auto),
/// or CAF requests (FERRY_CONTROL_CHANNEL=caf: the tests ctest names
/// caf_channel:...).
bool control_channel_on();

/// The rendezvous calls `registry`'s node made to peers by the channel this
/// run is not on (ferry_control_calls_total{channel}): under
/// FERRY_CONTROL_CHANNEL=caf none ever; else none where the node has UCX
/// and every peer it called serves the control channel.
double calls_by_other_channel(prometheus::Registry& registry);

/// The rendezvous calls `registry`'s node made by `channel` (caf or
/// ucx_am): ferry_control_calls_total{channel}.
double control_calls(prometheus::Registry& registry, const char* channel);

/// The peers whose calls take `channel`: ferry_control_channel{channel}.
double control_peers(prometheus::Registry& registry, const char* channel);

/// A deterministic payload of n bytes.
byte_buffer payload(size_t n, uint64_t seed = 1);

/// Polls `pred` until it holds, at most `bound`; false when it never did.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds bound = std::chrono::seconds{10}) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  return true;
}

/// A fresh temporary directory.
std::string temp_dir();

} // namespace ferry::test
