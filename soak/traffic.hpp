// traffic: the operations of a soak run, each between two up nodes chosen
// with the caller's seeded generator, recorded in the ledger:
//   get      an owner stages a payload (4 KiB to the largest size; plain or
//            pinned), a consumer gets it (copied or in a pinned block),
//            verifies its checksum and releases it
//   call     a messenger call to soak.echo, its echo verified
//   stream   a stream from soak.items, every item verified
//   giveup   a get whose caller goes after a few milliseconds
// A payload nobody released (its get failed) is freed by its owner. A
// giveup's payload also has a time-to-live: a caller that gives up just as
// its answer comes never learns its lease (docs/known-issues.md), and the
// time-to-live is what frees such a slot, as it would for a user.
// The fault runner uses the same steps (stage, get_staged) for its own
// operations. Owns: nothing. Must never: leave a staged payload unfreed.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "soak/run_ledger.hpp"
#include "soak/soak_cluster.hpp"

namespace ferry::soak {

/// The longest an operation may take to fail, and how long the driver
/// waits for its answer before calling it hung.
inline constexpr std::chrono::milliseconds op_bound =
  node_transfer_timeout + 2 * node_request_timeout;
inline constexpr std::chrono::milliseconds op_wait = op_bound + std::chrono::seconds{20};

struct staged_payload {
  int owner = -1;
  std::string handle;
  uint64_t size = 0;
  uint64_t checksum = 0;
  bool pinned = false;
};

class traffic {
public:
  traffic(soak_cluster& cluster, run_ledger& ledger, const soak_options& opts)
    : cluster_(cluster), ledger_(ledger), opts_(opts) {}

  /// One operation of the mix.
  void run_one(std::mt19937_64& rng);

  /// Stages a payload on `owner` (a failure is recorded as an operation).
  std::optional<staged_payload> stage(int owner, uint64_t size, bool pinned, uint64_t seed,
                                      std::chrono::milliseconds ttl = {});
  /// `consumer` gets `p` (verified, released); the answer, recorded under
  /// `kind`. A payload left unreleased is freed by its owner.
  node_answer get_staged(int consumer, const staged_payload& p, bool pinned_block,
                         const std::string& kind);
  /// The owner frees `p` (nobody released it).
  void free_staged(const staged_payload& p);

private:
  uint64_t pick_size(std::mt19937_64& rng, uint64_t at_least = 0) const;
  /// Two distinct up nodes (an owner and its consumer, a caller and its
  /// callee); nullopt when fewer than two are up.
  std::optional<std::pair<int, int>> pick_pair(std::mt19937_64& rng) const;
  void get_op(std::mt19937_64& rng);
  void call_op(std::mt19937_64& rng);
  void stream_op(std::mt19937_64& rng);
  void giveup_op(std::mt19937_64& rng);
  void record(const std::string& kind, std::vector<int> nodes, soak_clock::time_point start,
              const node_answer& a, uint64_t bytes);

  soak_cluster& cluster_;
  run_ledger& ledger_;
  const soak_options& opts_;
};

} // namespace ferry::soak
