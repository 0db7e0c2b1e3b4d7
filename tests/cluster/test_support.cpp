#include "tests/cluster/test_support.hpp"

#include "process/child_process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

namespace ferry::test {

using namespace std::chrono_literals;

std::string ferry_bin() {
  auto p = std::getenv("FERRY_BIN");
  if (p == nullptr)
    throw std::runtime_error("FERRY_BIN is not set (run the tests through ctest)");
  return p;
}

bool control_channel_on() {
  auto c = std::getenv("FERRY_CONTROL_CHANNEL");
  return c == nullptr || std::string{c} != "caf";
}

double calls_by_other_channel(prometheus::Registry& registry) {
  return control_calls(registry, control_channel_on() ? "caf" : "ucx_am");
}

double control_calls(prometheus::Registry& registry, const char* channel) {
  return registry_value(registry, "ferry_control_calls_total", "channel", channel);
}

double control_peers(prometheus::Registry& registry, const char* channel) {
  return registry_value(registry, "ferry_control_channel", "channel", channel);
}

namespace {

/// The directories temp_dir made, removed when the test binary exits
/// (kept with FERRY_KEEP_TEST_DIRS=1, to read a failed test's logs).
struct temp_dirs {
  std::mutex mx;
  std::vector<std::string> made;
  ~temp_dirs() {
    if (std::getenv("FERRY_KEEP_TEST_DIRS") != nullptr)
      return;
    std::error_code ignored;
    for (const auto& d : made)
      std::filesystem::remove_all(d, ignored);
  }
};

temp_dirs& made_dirs() {
  static temp_dirs dirs;
  return dirs;
}

} // namespace

std::string temp_dir() {
  char tmpl[] = "/tmp/ferry-test-XXXXXX";
  auto d = mkdtemp(tmpl);
  if (d == nullptr)
    throw std::runtime_error("mkdtemp failed");
  auto& dirs = made_dirs();
  std::lock_guard<std::mutex> guard{dirs.mx};
  dirs.made.emplace_back(d);
  return d;
}

namespace {

std::string read_file(const std::string& path) {
  return process::read_text_file(path);
}

/// Starts `program args...` (default: ferry) with stdout and stderr in
/// files; the caller reaps it.
pid_t spawn_ferry(const std::vector<std::string>& args, const std::string& out,
                  const std::string& err, const std::vector<std::string>& env,
                  const std::string& program = {}) {
  process::child_spec spec;
  spec.program = program.empty() ? ferry_bin() : program;
  spec.args = args;
  spec.env = env;
  spec.out = process::stream::file(out);
  spec.err = process::stream::file(err);
  process::child_process child;
  if (auto why = child.start(spec); !why.empty())
    throw std::runtime_error("cannot start " + spec.program + ": " + why);
  return child.detach();
}

/// Waits for `pid` up to `timeout`; returns the wait status or -1.
int wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  return process::wait_for_exit(pid, timeout).value_or(-1);
}

} // namespace

node_process::node_process(std::vector<std::string> extra_args,
                           std::vector<std::string> env, std::string program)
  : dir_(temp_dir()) {
  std::vector<std::string> args{"--bind", "127.0.0.1", "--ready-file", dir_ + "/ready",
                                "--log-level", "info"};
  // Any free port, unless the test names one.
  if (std::find(extra_args.begin(), extra_args.end(), "--port") == extra_args.end())
    args.insert(args.end(), {"--port", "0"});
  if (program.empty())
    args.insert(args.begin(), "node");
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = spawn_ferry(args, dir_ + "/out", dir_ + "/err", env, program);
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

namespace {

/// Every thread of `pid` is stopped (its state is T or t); false once one
/// is not, or the process cannot be read.
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator tasks{"/proc/" + std::to_string(pid) + "/task", ec};
  if (ec)
    return false;
  bool any = false;
  for (const auto& task : tasks) {
    std::ifstream stat{task.path() / "stat"};
    std::string line;
    std::getline(stat, line);
    auto name_end = line.rfind(')'); // the state follows the command's name
    if (name_end == std::string::npos || name_end + 2 >= line.size())
      return false;
    char state = line[name_end + 2];
    if (state != 'T' && state != 't')
      return false;
    any = true;
  }
  return any;
}

} // namespace

bool freeze_process(pid_t pid) {
  if (pid <= 0 || ::kill(pid, SIGSTOP) != 0)
    return false;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!all_threads_stopped(pid)) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGCONT); // not left half-stopped
      return false;
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool node_process::freeze() {
  return freeze_process(pid_);
}

void node_process::thaw() {
  kill(SIGCONT);
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

http_reply http_get(uint16_t port, const std::string& path) {
  http_reply reply;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return reply;
  }
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
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
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  if (resp.compare(0, 5, "HTTP/") == 0) {
    auto sp = resp.find(' ');
    if (sp != std::string::npos)
      reply.status = std::atoi(resp.c_str() + sp + 1);
  }
  auto body = resp.find("\r\n\r\n");
  reply.body = body == std::string::npos ? std::string{} : resp.substr(body + 4);
  reply.raw = std::move(resp);
  return reply;
}

std::optional<std::set<uint64_t>> listed_members(const node_process& n,
                                                 const std::vector<std::string>& extra_args) {
  return listed_members(n.endpoint(), extra_args);
}

std::optional<std::set<uint64_t>> listed_members(const std::string& endpoint,
                                                 const std::vector<std::string>& extra_args) {
  std::vector<std::string> args{"stat", "--node", endpoint, "--json"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto r = run_ferry(args, 30s);
  if (r.exit_code != 0)
    return std::nullopt;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!j.is_object())
    return std::nullopt;
  std::set<uint64_t> ids;
  for (const auto& p : j["peers"])
    if (p.value("port", 0) != 0)
      ids.insert(p["worker_id"].get<uint64_t>());
  return ids;
}

std::string scrape_metrics(uint16_t port) {
  return http_get(port, "/metrics").raw;
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
  return registry_value(registry, name, "", "");
}

double registry_value(prometheus::Registry& registry, const std::string& name,
                      const std::string& label, const std::string& value) {
  double sum = 0;
  for (auto& family : registry.Collect()) {
    if (family.name != name)
      continue;
    for (auto& m : family.metric) {
      bool wanted = label.empty();
      for (auto& l : m.label)
        wanted = wanted || (l.name == label && l.value == value);
      if (wanted)
        sum += m.counter.value + m.gauge.value;
    }
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
