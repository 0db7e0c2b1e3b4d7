// peer_hello: what two nodes tell each other when they connect.
// Owns: identity (worker id, incarnation), capabilities, the UCX worker
// address (empty without UCX) and the actor handles a peer needs.
// Must never: be trusted for anything but routing; ids are the peer's word.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>

#include "protocol/bounded_bytes.hpp"

namespace ferry {

struct peer_hello {
  uint64_t worker_id = 0;
  uint64_t incarnation = 0;
  std::vector<std::string> capabilities; // e.g. "chunked", "ucx"
  std::vector<char> ucx_address;         // ucp_worker_get_address blob
  std::string host;                      // where its gateway listens
  uint16_t port = 0;                     // 0: a client that does not listen
  caf::actor gateway;
  caf::actor owner;
  caf::actor messenger; // named handlers (actors/messenger/messenger.hpp)
};

/// Bounds on what a peer may state in its hello.
struct peer_hello_limits {
  static constexpr size_t max_ucx_address = 16 * 1024; // UCX's are far smaller
  static constexpr size_t max_capabilities = 32;
  static constexpr size_t max_name = 255; // a capability or a host name
};

/// errc::protocol_violation naming the first field out of bounds (a zero
/// worker id, no gateway, an over-long UCX address, host or capability
/// list); none for a hello that may be registered.
caf::error check_hello(const peer_hello& h);

/// The same checks without the actor handles (what the fuzz target can
/// decode without an actor system).
caf::error check_hello_fields(const peer_hello& h);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_hello& x) {
  // The UCX address loads with its bound (CAF would allocate any stated size).
  bounded_bytes address{x.ucx_address, peer_hello_limits::max_ucx_address};
  return f(caf::meta::type_name("ferry::peer_hello"), x.worker_id,
           x.incarnation, x.capabilities, address, x.host, x.port,
           x.gateway, x.owner, x.messenger);
}

} // namespace ferry
