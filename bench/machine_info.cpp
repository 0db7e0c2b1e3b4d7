#include "bench/machine_info.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <caf/config.hpp>

#ifdef FERRY_BENCH_WITH_UCX
#include <ucp/api/ucp.h>
#endif

namespace ferry::bench {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\n\"");
  auto e = s.find_last_not_of(" \t\n\"");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

// "key<sep>value" lines: the value of the first line starting with key.
std::string field(const std::string& text, const std::string& key, char sep) {
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0) {
      auto pos = line.find(sep);
      if (pos != std::string::npos)
        return trim(line.substr(pos + 1));
    }
  return {};
}

} // namespace

double load_average() {
  std::istringstream in{read_text("/proc/loadavg")};
  double one = 0;
  in >> one;
  return one;
}

uint64_t process_memory_bytes(int pid, const std::string& which) {
  auto kib = field(read_text("/proc/" + std::to_string(pid) + "/status"), which, ':');
  return std::strtoull(kib.c_str(), nullptr, 10) * 1024; // "123 kB"
}

nlohmann::json describe_machine() {
  nlohmann::json m;
  auto cpuinfo = read_text("/proc/cpuinfo");
  m["cpu"] = field(cpuinfo, "model name", ':');
  m["cores"] = std::thread::hardware_concurrency();
  m["virtualized"] = field(cpuinfo, "flags", ':').find("hypervisor") != std::string::npos;
  auto kb = field(read_text("/proc/meminfo"), "MemTotal", ':');
  if (!kb.empty())
    m["memory_gib"] = static_cast<double>(std::stoull(kb)) / (1024.0 * 1024.0);
  utsname u{};
  if (::uname(&u) == 0) {
    m["kernel"] = std::string{u.sysname} + " " + u.release;
    m["arch"] = u.machine;
  }
  m["os"] = field(read_text("/etc/os-release"), "PRETTY_NAME", '=');
  auto thp = read_text("/sys/kernel/mm/transparent_hugepage/enabled");
  if (auto b = thp.find('['); b != std::string::npos)
    m["transparent_hugepages"] = thp.substr(b + 1, thp.find(']') - b - 1);
  m["load_average_1m"] = load_average();
  m["caf"] = std::to_string(CAF_MAJOR_VERSION) + "." + std::to_string(CAF_MINOR_VERSION)
             + "." + std::to_string(CAF_VERSION % 100);
#ifdef FERRY_BENCH_WITH_UCX
  m["ucx"] = ucp_get_version_string();
#else
  m["ucx"] = nullptr;
#endif
  m["compiler"] = __VERSION__;
#ifdef FERRY_BUILD_TYPE
  m["build_type"] = FERRY_BUILD_TYPE;
#endif
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
  m["date"] = stamp;
  return m;
}

} // namespace ferry::bench
