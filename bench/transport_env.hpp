// transport_env: which UCX transport a bench row runs on, and the
// environment that selects it — in a peer process (given at spawn) and in
// this process (set for the life of a row, restored after).
// UCX reads UCX_TLS and UCX_NET_DEVICES when a context is created
// (ucp_init), so a row sets them in start(), before its first UCX context
// or ferry::node with UCX exists, and while no other thread runs (setenv is
// not thread-safe; rows run one after another and stop their threads).
// Owns: the previous values it restores. Must never: be set or restored
// while a thread of this process may read the environment.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ferry::bench {

/// The UCX transports the bench compares: shared memory or tcp on lo.
enum class ucx_transport { sm, tcp };

/// "sm,self" or "tcp,self" (the values the RDMA tests run with).
std::string ucx_tls(ucx_transport t);

/// "UCX_TLS=..." and "UCX_NET_DEVICES=lo", for a peer process; over tcp
/// also FERRY_RDMA_EMULATED_GETS, 1 unless `emulated_gets` is false: the tcp
/// RDMA rows measure UCX's emulated GET, which a node takes only when
/// allowed (by default a tcp pair's gets go by chunks:
/// rdma/one_sided_reads.hpp).
std::vector<std::string> ucx_peer_env(ucx_transport t, bool emulated_gets = true);

/// Sets an environment variable for the life of the object.
class scoped_env {
public:
  scoped_env(const char* key, const std::string& value);
  ~scoped_env();
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  const char* key_;
  std::optional<std::string> old_;
};

/// What ucx_peer_env gives a peer, in this process for the life of the
/// object.
class scoped_transport_env {
public:
  explicit scoped_transport_env(ucx_transport t, bool emulated_gets = true);

private:
  scoped_env tls_;
  scoped_env devices_;
  std::optional<scoped_env> emulated_gets_;
};

} // namespace ferry::bench
