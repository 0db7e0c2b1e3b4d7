// child_process: one child of this process, started from a spec: which
// program (this executable when none), its arguments, its environment (this
// one's, with variables replaced or dropped), and where its standard streams
// go (a pipe to or from us, a file, or /dev/null). The bench's peers and the
// tests' nodes and UCX owners are all started with it.
// Owns: the child until detach() (it is killed and reaped when this object
// goes; with die_with_parent, also when this process dies), and the pipes.
// Must never: wait without a bound, or run anything but async-signal-safe
// calls between fork and exec.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ferry::process {

/// Where a standard stream of the child goes.
struct stream {
  enum class kind { null, pipe, file, inherit };
  kind to = kind::null;
  std::string path; // kind::file: created (or truncated)

  static stream null() { return {}; }
  static stream pipe() { return {kind::pipe, {}}; }
  static stream file(std::string p) { return {kind::file, std::move(p)}; }
  static stream inherit() { return {kind::inherit, {}}; }
};

struct child_spec {
  std::string program;             // empty: this executable (/proc/self/exe)
  std::string argv0;               // empty: the program
  std::vector<std::string> args;   // after argv[0]
  std::vector<std::string> env;    // "NAME=value", replacing NAME
  std::vector<std::string> drop_env_prefixes; // variables dropped by prefix
  stream in = stream::null();
  stream out = stream::null();
  stream err = stream::null();
  bool die_with_parent = true;     // PR_SET_PDEATHSIG(SIGKILL)
};

class child_process {
public:
  child_process() = default;
  ~child_process(); // kills and reaps a child still owned
  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Starts the child. Empty: started; else why not.
  std::string start(const child_spec& spec);

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  /// Lets go of the child: the caller reaps it (wait_for_exit) from now on.
  pid_t detach();

  /// Writes one line (a newline is added) to its stdin pipe.
  bool send_line(const std::string& line);
  /// The next line it prints on its stdout pipe, or nullopt with *error set
  /// when it exits, closes its output or stays silent for `limit`.
  std::optional<std::string> read_line(std::chrono::milliseconds limit,
                                       std::string* error);
  /// Closes its stdin pipe (a peer reading commands takes it as "quit").
  void close_input();

  void signal(int sig);
  /// Its wait status once it exited within `limit` (then it is reaped).
  std::optional<int> wait(std::chrono::milliseconds limit);
  /// SIGKILL and reap (bounded).
  void kill();

private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string pending_; // bytes read past the last returned line
};

/// Waits up to `limit` for `pid` (a detached child) to exit; its wait
/// status, or nullopt.
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit);

/// The whole of a file (a child's log), or "" when it cannot be read.
std::string read_text_file(const std::string& path);

} // namespace ferry::process
