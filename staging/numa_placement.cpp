#include "staging/numa_placement.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "protocol/errors.hpp"

// libnuma 2.0.16's numaif.h predates the mode flags; the value is the
// kernel's ABI (linux/mempolicy.h, which clashes with numaif.h).
#ifndef MPOL_F_STATIC_NODES
#define MPOL_F_STATIC_NODES (1 << 15)
#endif

namespace ferry::staging {

namespace {

caf::error placement_error(std::string what) {
  return make_error(errc::invalid_argument, "--staging-location: " + std::move(what));
}

std::string list(const std::vector<int>& nodes) {
  std::string out;
  for (auto n : nodes)
    out += (out.empty() ? "" : ",") + std::to_string(n);
  return out.empty() ? "none" : out;
}

} // namespace

caf::expected<numa_view> read_numa_view() {
  if (numa_available() < 0)
    return placement_error("NUMA is not available on this machine");
  numa_view v;
  struct bitmask* allowed = numa_get_mems_allowed(); // this thread's, now
  int highest = numa_max_node();
  for (int n = 0; n <= highest; ++n) {
    long long free_bytes = 0;
    bool has_memory = numa_node_size64(n, &free_bytes) > 0;
    if (has_memory && numa_bitmask_isbitset(allowed, static_cast<unsigned>(n)))
      v.eligible.push_back(n);
  }
  numa_bitmask_free(allowed);
  return v;
}

caf::expected<std::optional<int>> gpu_numa_node(const std::string& bus_id,
                                                const std::string& sysfs) {
  std::string id = bus_id;
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (id.empty() || id.find('/') != std::string::npos || id.find("..") != std::string::npos)
    return placement_error("bad PCI address '" + bus_id + "'");
  auto path = sysfs + "/bus/pci/devices/" + id + "/numa_node";
  std::ifstream in{path};
  int node = -2;
  if (!(in >> node))
    return placement_error("cannot read " + path + " (the GPU's locality)");
  if (node < -1)
    return placement_error(path + " says " + std::to_string(node));
  if (node == -1)
    return std::optional<int>{}; // unknown: never taken as node 0
  return std::optional<int>{node};
}

caf::expected<node_choice> select_staging_node(const staging_location& where,
                                               const numa_view& view,
                                               std::optional<int> gpu_node) {
  using kind = staging_location::kind;
  if (where.k == kind::any)
    return node_choice{};
  auto eligible = [&](int n) {
    return std::find(view.eligible.begin(), view.eligible.end(), n) != view.eligible.end();
  };
  if (view.eligible.empty())
    return placement_error("no NUMA node is eligible (none has online memory in this "
                           "thread's allowed set)");
  if (where.k == kind::cpu) {
    if (!eligible(where.node))
      return placement_error("cpu:" + std::to_string(where.node)
                             + " is not available (eligible nodes: " + list(view.eligible)
                             + ")");
    return node_choice{where.node, false};
  }
  if (gpu_node && eligible(*gpu_node))
    return node_choice{*gpu_node, true};
  return node_choice{view.eligible.front(), false};
}

bound_mapping& bound_mapping::operator=(bound_mapping&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = other.data_;
    bytes_ = other.bytes_;
    node_ = other.node_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void bound_mapping::unmap() {
  if (data_ != nullptr)
    munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

caf::expected<bound_mapping> bound_mapping::map(size_t bytes, int node) {
  if (bytes == 0)
    return placement_error("a chunk of zero bytes");
  if (node < -1 || node >= static_cast<int>(sizeof(unsigned long) * 8))
    return placement_error("node " + std::to_string(node) + " is out of range");
  auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto len = (bytes + page - 1) / page * page;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return make_error(errc::resource_exhausted,
                      "mmap of " + std::to_string(len) + " bytes failed");
  unsigned long mask = node < 0 ? 0 : 1ul << node;
  if (node >= 0 && mbind(p, len, MPOL_BIND | MPOL_F_STATIC_NODES, &mask, sizeof(mask) * 8, 0) != 0) {
    int e = errno;
    munmap(p, len);
    return placement_error("mbind to node " + std::to_string(node)
                           + " failed: " + std::strerror(e));
  }
  bound_mapping m;
  m.data_ = static_cast<char*>(p);
  m.bytes_ = len;
  m.node_ = node;
  return m;
}

caf::expected<int> node_of_page(const void* addr) {
  int node = -1;
  if (get_mempolicy(&node, nullptr, 0, const_cast<void*>(addr), MPOL_F_NODE | MPOL_F_ADDR)
      != 0)
    return placement_error(std::string{"get_mempolicy: "} + std::strerror(errno));
  return node;
}

} // namespace ferry::staging
