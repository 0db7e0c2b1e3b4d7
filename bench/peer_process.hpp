// peer_process: the other end of a two-process scenario, as seen from the
// bench: this binary re-executed as `ferry bench-peer --role ROLE ...`,
// driven over its stdin/stdout with one text line per command and answer.
// Owns: the child (a process::child_process: it dies with the bench), and
// the file its stderr goes to (shown when something fails).
// Must never: wait on the child without a bound, or leave it running.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "process/child_process.hpp"

namespace ferry::bench {

class peer_process {
public:
  peer_process() = default;
  ~peer_process();
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;

  /// Starts `<this executable> bench-peer <args...>` with `env` ("K=V")
  /// added to the environment. Empty: started; else why not.
  std::string spawn(const std::vector<std::string>& args,
                    const std::vector<std::string>& env = {});

  /// Sends one line (a newline is added).
  bool send_line(const std::string& line);

  /// The next line the peer prints, or "" with *error set when the peer
  /// exits, closes its output or stays silent for `limit`.
  std::string read_line(std::chrono::milliseconds limit, std::string* error);

  /// send_line + read_line; an answer starting with "error" becomes an error.
  std::string ask(const std::string& line, std::chrono::milliseconds limit,
                  std::string* error);

  /// The peer's greeting: a line "ready" + `fields` more words, which are
  /// returned. Empty with *error set on silence, an "error ..." line (the
  /// peer's own words) or any other line.
  std::vector<std::string> await_ready(size_t fields, std::chrono::milliseconds limit,
                                       std::string* error);

  /// Asks the peer to quit (closes its stdin), waits up to 5 s, then kills.
  void stop();

  /// The last lines of the peer's stderr (for error messages).
  std::string stderr_tail() const;

  bool running() const { return child_.running(); }
  int pid() const { return child_.pid(); }

private:
  process::child_process child_;
  std::string err_path_;
};

/// Splits a line at spaces.
std::vector<std::string> split_words(const std::string& line);

} // namespace ferry::bench
