#include "tests/cluster/test_support.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <prometheus/registry.h>

extern char** environ;

namespace ferry::test {

using namespace std::chrono_literals;

std::string ferry_bin() {
  auto p = std::getenv("FERRY_BIN");
  if (p == nullptr)
    throw std::runtime_error("FERRY_BIN is not set (run the tests through ctest)");
  return p;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/ferry-test-XXXXXX";
  auto d = mkdtemp(tmpl);
  if (d == nullptr)
    throw std::runtime_error("mkdtemp failed");
  return d;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Starts `ferry args...` with stdout and stderr in files.
pid_t spawn_ferry(const std::vector<std::string>& args, const std::string& out,
                  const std::string& err, const std::vector<std::string>& env) {
  std::vector<std::string> argv_s{ferry_bin()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e)
    env_s.emplace_back(*e);
  for (auto& extra : env) {
    auto name = extra.substr(0, extra.find('=') + 1);
    env_s.erase(std::remove_if(env_s.begin(), env_s.end(),
                               [&](const std::string& x) {
                                 return x.compare(0, name.size(), name) == 0;
                               }),
                env_s.end());
    env_s.push_back(extra);
  }
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  auto rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv_s[0] + ": " + std::strerror(rc));
  return pid;
}

/// Waits for `pid` up to `timeout`; returns the wait status or -1.
int wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    auto r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return status;
    if (r < 0 || std::chrono::steady_clock::now() > deadline)
      return -1;
    std::this_thread::sleep_for(10ms);
  }
}

} // namespace

node_process::node_process(std::vector<std::string> extra_args,
                           std::vector<std::string> env)
  : dir_(temp_dir()) {
  std::vector<std::string> args{"node", "--port", "0", "--bind", "127.0.0.1",
                                "--ready-file", dir_ + "/ready", "--log-level",
                                "info"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = spawn_ferry(args, dir_ + "/out", dir_ + "/err", env);
  auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    std::ifstream ready{dir_ + "/ready"};
    if (ready >> port_ >> metrics_port_ >> worker_id_)
      return;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("ferry node exited early: " + log());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(SIGKILL);
      throw std::runtime_error("ferry node did not start in 30 s: " + log());
    }
    std::this_thread::sleep_for(20ms);
  }
}

node_process::~node_process() {
  if (pid_ > 0)
    stop();
}

std::string node_process::endpoint() const {
  return "127.0.0.1:" + std::to_string(port_);
}

void node_process::kill(int sig) {
  if (pid_ <= 0)
    return;
  ::kill(pid_, sig);
  if (sig == SIGKILL) {
    wait_for(pid_, 10s);
    pid_ = -1;
  }
}

int node_process::stop() {
  if (pid_ <= 0)
    return -1;
  ::kill(pid_, SIGTERM);
  auto status = wait_for(pid_, 15s);
  if (status == -1) {
    ::kill(pid_, SIGKILL);
    status = wait_for(pid_, 5s);
  }
  pid_ = -1;
  return status;
}

std::string node_process::log() const {
  return read_file(dir_ + "/out") + read_file(dir_ + "/err");
}

pid_t start_ferry(const std::vector<std::string>& args,
                  std::vector<std::string> env, std::string* err_path) {
  auto dir = temp_dir();
  if (err_path)
    *err_path = dir + "/err";
  return spawn_ferry(args, dir + "/out", dir + "/err", env);
}

command_result run_ferry(const std::vector<std::string>& args,
                         std::chrono::seconds timeout,
                         std::vector<std::string> env) {
  auto dir = temp_dir();
  auto pid = spawn_ferry(args, dir + "/out", dir + "/err", env);
  auto status = wait_for(pid, timeout);
  if (status == -1) {
    ::kill(pid, SIGKILL);
    wait_for(pid, 5s);
  }
  command_result r;
  r.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir + "/out");
  r.err = read_file(dir + "/err");
  return r;
}

std::string scrape_metrics(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return {};
  }
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void) !::write(fd, req.data(), req.size());
  std::string resp;
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n <= 0)
      break;
    resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return resp;
}

double series_value(const std::string& text, const std::string& series) {
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, series.size(), series) == 0 && line.size() > series.size()
        && line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

double registry_value(prometheus::Registry& registry, const std::string& name) {
  double sum = 0;
  for (auto& family : registry.Collect()) {
    if (family.name != name)
      continue;
    for (auto& m : family.metric)
      sum += m.counter.value + m.gauge.value;
  }
  return sum;
}

byte_buffer payload(size_t n, uint64_t seed) {
  byte_buffer b(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b[i] = static_cast<char>(x);
  }
  return b;
}

} // namespace ferry::test
