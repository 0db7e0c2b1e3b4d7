// seated_owner: what the concurrency and fan-in rows share: one owner peer
// process and a number of consumer seats (in-process nodes) connected to it,
// both on the RDMA transport when one is given (set for this process too,
// for as long as they run). Owns them; stop() (or the destructor) ends the
// seats first, then the owner.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/consumer_seat.hpp"
#include "bench/owner_peer.hpp"
#include "bench/transport_env.hpp"

namespace ferry::bench {

struct seated_owner {
  std::optional<scoped_transport_env> env;
  owner_peer owner;
  std::vector<std::unique_ptr<consumer_seat>> seats;

  /// Starts the owner and `count` seats; an error names what failed, each
  /// seat as "<seat_name> <index>".
  std::string start(const ferry_knobs& knobs, std::optional<ucx_transport> rdma, int count,
                    const std::string& seat_name);
  void stop();
  ~seated_owner() { stop(); }
};

} // namespace ferry::bench
