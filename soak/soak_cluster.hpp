// soak_cluster: the node processes of a soak run, one slot each, and what
// state each slot is in. A slot's roles are fixed by its index: odd slots
// run UCX over tcp only, even slots over shared memory and tcp (so a pair
// of even slots uses shared memory and any pair with an odd slot tcp);
// slot 2 has a small registered-memory budget (budget exhaustion); slot 3
// runs with the RDMA kill switch engaged (FERRY_RDMA_RENDEZVOUS_DISABLE).
// A killed or stopped slot is restarted as a new incarnation that rejoins
// the others (it dials each, and each must list it among its peers).
// Every node process is started from one thread the cluster keeps for its
// whole life: a child dies with the thread that started it (the kernel's
// parent-death signal follows the thread), so a node a fault restarted
// must not belong to the fault's thread.
// Owns: the links (node processes) and that thread. Must never: hand out a
// down slot.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "soak/node_link.hpp"
#include "soak/run_ledger.hpp"
#include "soak/soak_options.hpp"

namespace ferry::soak {

struct node_role {
  bool tcp_only = false;
  bool small_budget = false;
  bool kill_switch = false;
  bool caf_control = false; // --control-channel caf: its pairs stay on CAF requests
  bool rdma() const { return !kill_switch; }
};

/// The registered-memory budget of the small-budget slot.
inline constexpr uint64_t small_budget_bytes = 96ull << 20;
/// Every node's bounds (given to each on its command line).
inline constexpr std::chrono::milliseconds node_request_timeout{5000};
inline constexpr std::chrono::milliseconds node_transfer_timeout{60000};
// Well inside the settle bound (soak_options::settle): see launch().
inline constexpr std::chrono::milliseconds node_lease_timeout{20000};
inline constexpr std::chrono::milliseconds node_shutdown_timeout{10000};

node_role role_of(int slot);

class soak_cluster {
public:
  explicit soak_cluster(const soak_options& opts);
  ~soak_cluster();

  /// Starts every slot and joins them; empty or why not.
  std::string start();
  /// Stops every node (the end of its input: a graceful stop), bounded.
  void stop();

  int size() const { return static_cast<int>(slots_.size()); }
  /// Where the nodes' logs go (one file per incarnation).
  const std::string& log_dir() const { return log_dir_; }
  const node_role& role(int slot) const { return slots_.at(slot).role; }

  /// The slot's link while it is up (else null).
  std::shared_ptr<node_link> up(int slot) const;
  /// A seeded choice among the up slots that pass `accept`, not in `not_these`.
  std::optional<int> pick(std::mt19937_64& rng, const std::vector<int>& not_these = {},
                          const std::function<bool(int)>& accept = {}) const;
  /// The command on the slot's node; lost when the slot is down.
  node_answer ask(int slot, const std::string& command, std::chrono::milliseconds limit) const;
  /// The slot's worker id (of its current incarnation).
  uint64_t worker_id(int slot) const;

  /// Takes the slot out of traffic and hands its link to the fault.
  std::shared_ptr<node_link> take_down(int slot);
  /// Marks a slot stopped (SIGSTOP) or resumed; a stopped slot is not picked.
  void set_paused(int slot, bool paused);
  /// The slots whose process exited while the cluster counted it up.
  std::vector<int> exited_unexpectedly() const;
  /// Starts the slot's next incarnation and joins it; empty or why not.
  std::string restart(int slot);
  int incarnation(int slot) const;
  /// Dials every up slot again and waits until both sides list each other
  /// (after a stop and resume); empty or why not.
  std::string rejoin(int slot) { return join(slot); }

  /// The slot's node stat (node_commands.hpp), or nullopt with *error.
  std::optional<nlohmann::json> stat(int slot, std::string* error) const;
  /// Samples every up node's resident memory into `ledger`.
  void sample_rss(run_ledger& ledger, double at_seconds) const;
  /// The idle registered bytes of the slot's incarnation (its first stat).
  double idle_registered(int slot) const;

private:
  struct slot {
    node_role role;
    std::shared_ptr<node_link> link;
    bool paused = false;
    int incarnation = 0;
    double idle_registered = 0;
  };
  std::string launch(int index);
  std::string join(int index);
  /// Runs `job` on the spawner thread and waits for it.
  std::string on_spawner(std::function<std::string()> job);
  void spawner_loop();

  soak_options opts_;
  std::string log_dir_;
  mutable std::mutex mtx_;
  std::vector<slot> slots_;

  std::mutex spawn_mtx_;
  std::condition_variable spawn_cv_;
  std::deque<std::packaged_task<std::string()>> spawn_jobs_;
  bool spawner_done_ = false;
  std::thread spawner_;
};

} // namespace ferry::soak
