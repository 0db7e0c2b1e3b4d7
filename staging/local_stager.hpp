// local_stager: local GPU copies through the pinned chunk pool, end to end
// and blocking (the staging workers call it; never a cooperative actor).
// It owns the pool, the chunks' native state, the retained primary context
// of each device it touched and each device's GPU locality (cached per
// context), and picks each chunk's node from staging_location, re-reading
// the eligible NUMA nodes at every selection.
// One copy checks out one chunk and walks its whole range; a chunk goes
// back only when its copy drained and the context was restored.
// Must never: run a native call under the pool's lock, or free a chunk
// whose cleanup failed.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "staging/chunk_pool.hpp"
#include "staging/cuda_api.hpp"
#include "staging/pinned_chunk.hpp"
#include "staging/staged_copy.hpp"
#include "staging/staging_config.hpp"

namespace ferry::staging {

class local_stager {
public:
  struct options {
    std::string sysfs = "/sys"; // where GPU locality is read (tests: a fixture)
  };

  local_stager(std::shared_ptr<cuda_api> api, staging_config cfg)
    : local_stager(std::move(api), std::move(cfg), options{}) {}
  local_stager(std::shared_ptr<cuda_api> api, staging_config cfg, options opts);
  ~local_stager(); // closes (idle chunks freed, contexts released)

  /// Empty when copies can run, else why staging is off.
  std::string unavailable_reason() const { return api_->unavailable_reason(); }

  /// One copy on `device` (its primary context) through one chunk.
  copy_result copy(int device, const copy_job& job);

  /// A chunk lent whole to a remote staging session (its own stream and
  /// events), bound to `ctx`, the device's primary context.
  struct chunk_loan {
    chunk_id id = 0;
    std::shared_ptr<pinned_chunk> chunk;
    cuda_context ctx = 0;
  };
  /// `count` chunks for `device`, all or none: resource_exhausted when the
  /// pool cannot give them all now (what was taken goes back).
  caf::expected<std::vector<chunk_loan>> borrow(int device, size_t count);
  /// A lent chunk comes back: ok when no copy into it may still run and
  /// the context was restored (idle), else retained.
  void give_back(const chunk_loan& loan, bool ok);
  /// Counts bytes a session copied through its chunks.
  void count_copied(bool to_host, uint64_t bytes) { pool_.count_copied(to_host, bytes); }

  /// The node a chunk for `device` would take now (for stat and tests).
  caf::expected<node_choice> placement(int device);

  /// Frees the idle chunks; counts what stays retained.
  void close();

  chunk_pool_stats stats() const { return pool_.stats(); }
  const staging_config& config() const { return cfg_; }
  cuda_api& api() { return *api_; }
  /// backend, availability, chunk states and counters, as JSON text.
  std::string status_json() const;

private:
  struct device_state {
    cuda_context ctx = 0;
    std::optional<int> gpu_node; // its locality, read once
    bool locality_read = false;
  };
  caf::expected<chunk_key> key_for(int device);
  caf::expected<std::shared_ptr<pinned_chunk>> chunk_for(const chunk_pool::grant& g,
                                                         const chunk_key& key);

  std::shared_ptr<cuda_api> api_;
  staging_config cfg_;
  options opts_;
  chunk_pool pool_;
  mutable std::mutex devices_mu_; // guards devices_ (never held over a native call)
  std::map<int, device_state> devices_;
};

} // namespace ferry::staging
