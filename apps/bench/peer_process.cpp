#include "apps/bench/peer_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

bool reap(pid_t pid, std::chrono::milliseconds limit) {
  auto until = clock_type::now() + limit;
  for (;;) {
    int status = 0;
    auto r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD))
      return true;
    if (clock_type::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

} // namespace

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in{line};
  std::string w;
  while (in >> w)
    out.push_back(w);
  return out;
}

peer_process::~peer_process() {
  stop();
}

std::string peer_process::spawn(const std::vector<std::string>& args,
                                const std::vector<std::string>& env) {
  char exe[4096];
  auto n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return "cannot find this executable (/proc/self/exe)";
  exe[n] = '\0';
  char tmpl[] = "/tmp/ferry-bench-peer-XXXXXX";
  int err_fd = ::mkstemp(tmpl);
  if (err_fd < 0)
    return "cannot create a log file for the peer";
  err_path_ = tmpl;
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(err_fd);
    return "pipe: " + std::string{std::strerror(errno)};
  }
  std::vector<std::string> argv_s{exe, "bench-peer"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment is built here: after fork, only async-signal-safe calls.
  std::vector<std::string> env_s;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv{*e};
    auto key = kv.substr(0, kv.find('=') + 1);
    bool replaced = false;
    for (const auto& add : env)
      replaced = replaced || add.compare(0, key.size(), key) == 0;
    if (!replaced)
      env_s.push_back(std::move(kv));
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& kv : env_s)
    envp.push_back(kv.data());
  envp.push_back(nullptr);
  auto parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(err_fd);
    return "fork: " + std::string{std::strerror(errno)};
  }
  if (pid_ == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(err_fd);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  return {};
}

bool peer_process::send_line(const std::string& line) {
  if (to_child_ < 0)
    return false;
  auto text = line + "\n";
  size_t off = 0;
  while (off < text.size()) {
    auto n = ::write(to_child_, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string peer_process::read_line(std::chrono::milliseconds limit,
                                    std::string* error) {
  auto until = clock_type::now() + limit;
  for (;;) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      auto line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (from_child_ < 0) {
      *error = "the peer is not running";
      return {};
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - clock_type::now());
    if (left.count() <= 0) {
      *error = "the peer did not answer within "
               + std::to_string(limit.count()) + " ms";
      return {};
    }
    pollfd pfd{from_child_, POLLIN, 0};
    auto r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue;
    char buf[4096];
    auto n = ::read(from_child_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      *error = "the peer exited" + (stderr_tail().empty()
                                      ? std::string{}
                                      : ": " + stderr_tail());
      close_fd(from_child_);
      return {};
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
}

std::string peer_process::ask(const std::string& line,
                              std::chrono::milliseconds limit,
                              std::string* error) {
  if (!send_line(line)) {
    *error = "cannot write to the peer";
    return {};
  }
  auto answer = read_line(limit, error);
  if (answer.rfind("error", 0) == 0) {
    *error = "peer: " + answer;
    return {};
  }
  return answer;
}

std::vector<std::string> peer_process::await_ready(size_t fields,
                                                   std::chrono::milliseconds limit,
                                                   std::string* error) {
  auto line = read_line(limit, error);
  if (!error->empty())
    return {};
  if (line.rfind("error", 0) == 0) {
    *error = "peer: " + line;
    return {};
  }
  auto words = split_words(line);
  if (words.size() != fields + 1 || words[0] != "ready") {
    *error = "unexpected peer greeting: '" + line + "'";
    return {};
  }
  words.erase(words.begin());
  return words;
}

void peer_process::stop() {
  if (pid_ > 0) {
    send_line("quit");
    close_fd(to_child_);
    if (!reap(pid_, std::chrono::milliseconds{5000})) {
      ::kill(pid_, SIGKILL);
      reap(pid_, std::chrono::milliseconds{5000});
    }
    pid_ = -1;
  }
  close_fd(to_child_);
  close_fd(from_child_);
  if (!err_path_.empty()) {
    ::unlink(err_path_.c_str());
    err_path_.clear();
  }
}

std::string peer_process::stderr_tail() const {
  if (err_path_.empty())
    return {};
  std::ifstream in{err_path_};
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  if (text.size() > 600)
    text = "..." + text.substr(text.size() - 600);
  return text;
}

} // namespace ferry::bench
