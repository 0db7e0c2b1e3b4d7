// member_table: the rules of cluster membership, as plain data (the
// membership actor is a thin shell around it).
// Owns: the endpoints ("HOST:PORT") this node should be connected to and
// the state of each: the configured join targets (dialled until reached,
// and again whenever their member is gone, so a restarted seed is found
// again), endpoints learned from members (dialled a few times, then
// forgotten; again for about 20 s when their member is gone, so two members
// whose connection was cut find each other again), dials in flight, and
// which member each reached endpoint is.
// Must never: dial an endpoint twice at once, dial one that is a known
// member, or dial this node itself again once it has been recognised.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace ferry {

class member_table {
public:
  using clock = std::chrono::steady_clock;

  struct limits {
    std::chrono::milliseconds first_retry{250};
    std::chrono::milliseconds max_retry{5000};
    uint32_t learned_attempts = 3; // a learned endpoint is forgotten after these
    // A learned endpoint whose member left: tried this many times (with the
    // backoff, about 20 s in all), so a member stalled or cut off for that
    // long is found again; a member that is gone is refused at each.
    uint32_t rejoin_attempts = 8;
    // Up to this much later, at random, a learned endpoint is dialled
    // again: both sides of a cut dial each other, and dials that cross can
    // both be closed by CAF as redundant; spread apart, one gets through.
    std::chrono::milliseconds rejoin_jitter{200};
    size_t max_endpoints = 4096;   // learned endpoints beyond this are ignored
  };

  member_table(std::vector<std::string> join_targets, limits lim);
  explicit member_table(std::vector<std::string> join_targets)
    : member_table(std::move(join_targets), limits{}) {}

  /// This node's own endpoint (once it listens): never dialled.
  void set_self(std::string endpoint);

  /// An endpoint a member told us of; false when it is known, ourselves,
  /// or beyond max_endpoints.
  bool learn(const std::string& endpoint, clock::time_point now);

  /// The endpoints to dial now; each is marked in flight.
  std::vector<std::string> take_due(clock::time_point now);

  /// A dial reached `worker_id` (`self`: it was this node).
  void dialled(const std::string& endpoint, uint64_t worker_id, bool self);

  /// A dial failed: a join target is retried later (backing off), a learned
  /// endpoint a few times and then dropped.
  void dial_failed(const std::string& endpoint, clock::time_point now);

  /// A member registered (its hello came in, or our dial's answer).
  void joined(uint64_t worker_id, const std::string& endpoint);

  /// A member is gone: its endpoints are dialled again, a join target at
  /// once and until reached, a learned one within rejoin_jitter and for its
  /// rejoin_attempts, then forgotten.
  void left(uint64_t worker_id, clock::time_point now);

  /// Every join target was reached at least once (or is this node).
  bool ready() const;

  /// When the next endpoint is due (none: nothing waits).
  std::optional<clock::time_point> next_due() const;

  /// Join targets not reached yet.
  std::vector<std::string> unreached() const;

  size_t members() const { return member_endpoints_.size(); }

private:
  struct endpoint_state {
    bool join_target = false;
    bool reached_once = false;
    bool in_flight = false;
    bool rejoining = false; // learned, and its member left: rejoin_attempts
    uint64_t member = 0; // the member at this endpoint (0: none now)
    uint32_t failures = 0;
    clock::time_point due{};
  };

  std::chrono::milliseconds backoff(uint32_t failures) const;
  std::chrono::milliseconds jitter();

  limits lim_;
  std::set<std::string> self_endpoints_;
  std::map<std::string, endpoint_state> endpoints_;
  std::map<uint64_t, std::set<std::string>> member_endpoints_;
  std::minstd_rand rng_{std::random_device{}()};
};

} // namespace ferry
