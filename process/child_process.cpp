#include "process/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

extern char** environ;

namespace ferry::process {

namespace {

using clock_type = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// This environment with the spec's changes.
std::vector<std::string> child_environment(const child_spec& spec) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv{*e};
    auto name = kv.substr(0, kv.find('=') + 1);
    bool drop = false;
    for (const auto& add : spec.env)
      drop = drop || starts_with(add, name);
    for (const auto& prefix : spec.drop_env_prefixes)
      drop = drop || starts_with(kv, prefix);
    if (!drop)
      out.push_back(std::move(kv));
  }
  out.insert(out.end(), spec.env.begin(), spec.env.end());
  return out;
}

/// Opens what a stream of kind null or file needs (before the fork).
int open_target(const stream& s, bool for_input) {
  if (s.to == stream::kind::null)
    return ::open("/dev/null", (for_input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
  if (s.to == stream::kind::file)
    return ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  return -1;
}

std::string this_executable() {
  char exe[4096];
  auto n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return {};
  return std::string(exe, static_cast<size_t>(n));
}

} // namespace

child_process::~child_process() {
  kill();
  close_fd(to_child_);
  close_fd(from_child_);
}

child_process::child_process(child_process&& other) noexcept {
  *this = std::move(other);
}

child_process& child_process::operator=(child_process&& other) noexcept {
  if (this != &other) {
    kill();
    close_fd(to_child_);
    close_fd(from_child_);
    pid_ = std::exchange(other.pid_, -1);
    to_child_ = std::exchange(other.to_child_, -1);
    from_child_ = std::exchange(other.from_child_, -1);
    pending_ = std::move(other.pending_);
  }
  return *this;
}

std::string child_process::start(const child_spec& spec) {
  if (pid_ > 0)
    return "a child is already running";
  std::string program = spec.program.empty() ? this_executable() : spec.program;
  if (program.empty())
    return "cannot find this executable (/proc/self/exe)";
  std::vector<std::string> argv_s{spec.argv0.empty() ? program : spec.argv0};
  argv_s.insert(argv_s.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto env_s = child_environment(spec);
  std::vector<char*> envp;
  for (auto& kv : env_s)
    envp.push_back(kv.data());
  envp.push_back(nullptr);
  // Every descriptor the child gets: [0] stdin, [1] stdout, [2] stderr;
  // `ours` are the ones this process opened for it (closed after the fork).
  int fds[3] = {0, 1, 2};
  std::vector<int> ours;
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  auto fail = [&](const std::string& what) {
    std::string why = what + ": " + std::strerror(errno);
    for (int fd : ours)
      ::close(fd);
    close_fd(in_pipe[1]);
    close_fd(out_pipe[0]);
    return why;
  };
  const stream* streams[3] = {&spec.in, &spec.out, &spec.err};
  for (int i = 0; i < 3; ++i) {
    const auto& s = *streams[i];
    if (s.to == stream::kind::inherit)
      continue;
    if (s.to == stream::kind::pipe) {
      if (i == 2)
        return fail("stderr cannot be a pipe");
      int* p = i == 0 ? in_pipe : out_pipe;
      if (::pipe2(p, O_CLOEXEC) != 0)
        return fail("pipe");
      fds[i] = i == 0 ? p[0] : p[1];
    } else if ((fds[i] = open_target(s, i == 0)) < 0) {
      return fail("open " + (s.path.empty() ? std::string{"/dev/null"} : s.path));
    }
    ours.push_back(fds[i]);
  }
  const pid_t parent = ::getpid();
  const bool die_with_parent = spec.die_with_parent;
  pid_t pid = ::fork();
  if (pid < 0)
    return fail("fork");
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    if (die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
    }
    for (int i = 0; i < 3; ++i)
      if (fds[i] != i)
        ::dup2(fds[i], i); // dup2 clears close-on-exec on the copy
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  for (int fd : ours)
    ::close(fd);
  pid_ = pid;
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  return {};
}

pid_t child_process::detach() {
  close_fd(to_child_);
  close_fd(from_child_);
  return std::exchange(pid_, -1);
}

bool child_process::send_line(const std::string& line) {
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

std::optional<std::string> child_process::read_line(std::chrono::milliseconds limit,
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
      *error = "the child is not running";
      return std::nullopt;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - clock_type::now());
    if (left.count() <= 0) {
      *error = "no answer within " + std::to_string(limit.count()) + " ms";
      return std::nullopt;
    }
    pollfd p{from_child_, POLLIN, 0};
    auto r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue; // the deadline check above ends it
    char buf[4096];
    auto n = ::read(from_child_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      *error = "the child closed its output (it exited?)";
      close_fd(from_child_);
      return std::nullopt;
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
}

void child_process::close_input() {
  close_fd(to_child_);
}

void child_process::signal(int sig) {
  if (pid_ > 0)
    ::kill(pid_, sig);
}

std::optional<int> child_process::wait(std::chrono::milliseconds limit) {
  if (pid_ <= 0)
    return std::nullopt;
  auto status = wait_for_exit(pid_, limit);
  if (status)
    pid_ = -1;
  return status;
}

void child_process::kill() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  wait_for_exit(pid_, std::chrono::seconds{10});
  pid_ = -1;
}

std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit) {
  auto until = clock_type::now() + limit;
  for (;;) {
    int status = 0;
    auto r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return status;
    if (r < 0 && errno != EINTR)
      return std::nullopt; // not our child (or already reaped)
    if (clock_type::now() >= until)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

std::string read_text_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace ferry::process
