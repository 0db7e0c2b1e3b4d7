// numa_placement: where a pinned staging chunk's host memory lives.
// - numa_view: the nodes a chunk may go to now (online memory, and in the
//   calling thread's allowed set), re-read at every selection;
// - gpu_numa_node: a GPU's node from its PCI address through sysfs
//   (unknown is "unknown", never node 0);
// - select_staging_node: the spec's rule for any / auto / cpu:N, as a pure
//   function of the three (errors are errors, never a silent `any`);
// - bound_mapping: a fresh page-rounded anonymous mapping bound to one node
//   with mbind(MPOL_BIND | MPOL_F_STATIC_NODES) before its first touch.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "staging/staging_config.hpp"

namespace ferry::staging {

struct numa_view {
  std::vector<int> eligible; // ascending
};

/// The eligible nodes for the calling thread (libnuma); an error when NUMA
/// is not available at all.
caf::expected<numa_view> read_numa_view();

/// The NUMA node of the PCI device `bus_id` (as CUDA spells it, any case)
/// under `sysfs` (/sys): a node, none when the kernel reports -1 (unknown),
/// or an error when the device or its file cannot be read.
caf::expected<std::optional<int>> gpu_numa_node(const std::string& bus_id,
                                                const std::string& sysfs = "/sys");

struct node_choice {
  std::optional<int> node; // none: `any` (no placement claim)
  bool gpu_local = false;  // the GPU's own node (auto found its locality)
};

/// The node a chunk goes to: any -> none; cpu:N -> N when eligible, else an
/// error naming N and the eligible set; auto -> the GPU's node when known
/// and eligible, else the lowest eligible node (gpu_local false).
caf::expected<node_choice> select_staging_node(const staging_location& where,
                                               const numa_view& view,
                                               std::optional<int> gpu_node);

/// A page-rounded anonymous mapping bound to `node` before first touch
/// (node -1: not bound, for `any`).
class bound_mapping {
public:
  static caf::expected<bound_mapping> map(size_t bytes, int node);
  bound_mapping() = default;
  bound_mapping(bound_mapping&& other) noexcept { *this = std::move(other); }
  bound_mapping& operator=(bound_mapping&& other) noexcept;
  bound_mapping(const bound_mapping&) = delete;
  bound_mapping& operator=(const bound_mapping&) = delete;
  ~bound_mapping() { unmap(); }

  char* data() const { return data_; }
  size_t size() const { return bytes_; }
  int node() const { return node_; }
  /// Unmaps now (idempotent).
  void unmap();
  /// Gives up the mapping without unmapping it (an uncertain cleanup keeps
  /// it: the caller keeps its charge).
  void leak() { data_ = nullptr; bytes_ = 0; }

private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  int node_ = -1;
};

/// The node the page at `addr` lives on (touch it first), or an error.
caf::expected<int> node_of_page(const void* addr);

} // namespace ferry::staging
