// client_session: a non-listening node connected to one remote node, for the
// commands that talk to a running cluster (put, get, stat).
#pragma once

#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "actors/cluster/gateway_interface.hpp"
#include "protocol/peer_hello.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"

namespace ferry::app {

class client_session {
public:
  /// Starts a client node and connects it to `endpoint` (HOST:PORT).
  static caf::expected<std::unique_ptr<client_session>>
  open(node_config cfg, const std::string& endpoint);

  node& local() { return *node_; }
  blocking_client& client() { return client_; }
  gateway_actor remote() const;
  const peer_hello& remote_hello() const { return hello_; }

private:
  explicit client_session(std::unique_ptr<node> n);

  std::unique_ptr<node> node_;
  blocking_client client_;
  peer_hello hello_;
};

} // namespace ferry::app
