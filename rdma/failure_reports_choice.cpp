#include "rdma/failure_reports_choice.hpp"

#include <unistd.h>

#include <fstream>
#include <functional>

#include "protocol/hex64.hpp"

namespace ferry {

namespace {

/// The "ucx_shm:" token in `caps`, empty when none.
std::string_view machine_of(const std::vector<std::string>& caps) {
  for (const auto& c : caps)
    if (std::string_view{c}.substr(0, shared_memory_capability_prefix.size())
        == shared_memory_capability_prefix)
      return std::string_view{c}.substr(shared_memory_capability_prefix.size());
  return {};
}

} // namespace

std::string this_machine_token() {
  char host[256] = {};
  (void) ::gethostname(host, sizeof host - 1);
  std::string boot_id;
  std::ifstream{"/proc/sys/kernel/random/boot_id"} >> boot_id;
  auto h = std::hash<std::string>{}(std::string{host} + '/' + boot_id);
  return hex64(h);
}

std::string shared_memory_capability(std::string_view machine_token) {
  return std::string{shared_memory_capability_prefix} + std::string{machine_token};
}

bool shares_memory(const std::vector<std::string>& my_caps,
                   const std::vector<std::string>& peer_caps) {
  auto mine = machine_of(my_caps);
  return !mine.empty() && mine == machine_of(peer_caps);
}

bool wants_failure_reports(const std::vector<std::string>& my_caps,
                           const std::vector<std::string>& peer_caps) {
  return !shares_memory(my_caps, peer_caps);
}

} // namespace ferry
