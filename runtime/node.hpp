// node: ferry's public face. Owns the actor system (tuned scheduler,
// middleman with heartbeats), the node's identity (random non-zero worker id
// and incarnation), its actors (gateway, owner + lease reaper, consumer
// service), the peer connections, the metrics registry and its HTTP endpoint.
//
// Life cycle: construct (spawns the actors), start() (publishes the gateway,
// plain or over mutual TLS, opens the HTTP endpoint, and has membership
// join the configured members in the background), use, stop()
// (also run by the destructor): the RDMA sweep (see drain_rdma), unpublish,
// stop the actors, join the system.
// Must never: be shared between threads without the caller's own locking;
// the blocking API (blocking_client) is for plain code, not for actors.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/io/middleman_actor.hpp>

#include "actors/cluster/gateway_interface.hpp"
#include "actors/messenger/messenger_interface.hpp"
#include "actors/node_context.hpp"
#include "actors/rdma/arena_pool_actor.hpp"
#include "actors/rdma/ucx_engine.hpp"
#include "actors/rendezvous/consumer_service.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/peer_hello.hpp"
#include "runtime/node_config.hpp"

namespace prometheus {
class Registry;
} // namespace prometheus

namespace ferry {

class path_metrics;
class peer_directory;
struct owner_metrics;
struct consumer_metrics;
struct rdma_metrics;
struct messenger_metrics;
struct staging_metrics;
struct remote_staging_stats;
class remote_staging_metrics;
namespace staging {
class device_exposures;
class local_stager;
} // namespace staging
class ucx_context;
class http_endpoint;
class shutdown_deadline;

/// Adds application message types to a node's CAF config (every node of a
/// cluster must register the same ones).
using type_registrar = std::function<void(caf::actor_system_config&)>;

class node {
public:
  explicit node(node_config cfg, worker_registry workers = {},
                type_registrar extra_types = {});
  ~node();

  node(const node&) = delete;
  node& operator=(const node&) = delete;

  /// Publishes the gateway (when cfg.listen), opens the metrics endpoint and
  /// starts joining the configured members (--join; /readyz says when done).
  caf::error start();

  /// Stops the node's actors and joins the actor system. Idempotent.
  /// Calls in flight on other threads fail as the actors go; no thread may
  /// start a call on the node once stop() began (its handles and actor
  /// system go at its end).
  void stop();

  /// Connects to the node at host:port and exchanges hellos.
  caf::expected<peer_hello> connect(const std::string& host, uint16_t port);

  /// Connects to "HOST:PORT".
  caf::expected<peer_hello> connect(const std::string& endpoint);

  uint64_t worker_id() const { return worker_id_; }
  uint64_t incarnation() const { return incarnation_; }
  uint16_t port() const { return port_; }
  uint16_t metrics_port() const { return metrics_port_; }
  const node_config& config() const { return cfg_; }

  caf::actor_system& system() { return *sys_; }
  gateway_actor gateway() const { return gateway_; }
  owner_actor owner() const { return ctx_->owner; }
  consumer_service_actor consumer() const { return ctx_->consumer; }
  /// Named handlers across nodes (actors/messenger/messenger_interface.hpp; the
  /// blocking form is runtime/messenger_client.hpp).
  messenger_actor messenger() const { return messenger_; }
  const node_context& context() const { return *ctx_; }
  /// Hands a result back to the node's warm buffers (node_context::give_back);
  /// once the node stopped, the buffer is freed.
  void give_back(byte_buffer&& bytes);

  /// True when this node runs the UCX transport (the RDMA registry).
  bool has_ucx() const { return static_cast<bool>(engine_); }
  /// The RDMA actors (empty without UCX).
  arena_pool_actor arena_pool() const { return pool_; }
  const ucx_engine_ref& ucx_engine() const { return engine_; }

  /// The node's capabilities as told in its hello ("chunked", "ucx").
  std::vector<std::string> capabilities() const;

  /// Local GPU copies through the pinned chunk pool (staging/); its
  /// unavailable_reason() says why when staging is off (no driver, no GPU).
  const std::shared_ptr<staging::local_stager>& stager() const { return stager_; }
  /// The staging workers: (gpu_copy_atom, gpu_copy_request) -> bytes
  /// (actors/staging/staging_workers.hpp).
  caf::actor staging_workers() const { return staging_workers_; }
  /// Remote staging (docs/remote-staging.md): the device ranges this node
  /// exposes, its requester shards ((remote_stage_atom,
  /// remote_stage_request) -> remote_stage_outcome) and its counters.
  const std::shared_ptr<staging::device_exposures>& device_exposures() const {
    return exposures_;
  }
  caf::actor remote_stagers() const { return remote_stagers_; }
  const std::shared_ptr<remote_staging_stats>& remote_staging() const { return remote_stats_; }

  /// The registry, its sampled series (remote staging) brought up first.
  prometheus::Registry& metrics_registry();
  path_metrics& paths() { return *paths_; }

private:
  struct caf_config;

  /// Spawns and connects every service of the node (node_services.cpp).
  void wire_services(worker_registry workers);
  void start_ucx();
  /// `peers`: which worker lives on which node (the UCX CROSS's GETs go
  /// only to the peer a session talks to).
  void start_staging(std::shared_ptr<const peer_directory> peers);
  /// Dials host:port within the request timeout (a dial CAF cuts during its
  /// handshake is dialled again).
  caf::expected<gateway_actor> dial_gateway(const std::string& host, uint16_t port);
  /// The middleman actor that dials: CAF's OpenSSL one with TLS.
  caf::io::middleman_actor connector() const;
  void destroy_system(std::chrono::milliseconds bound);
  void refuse_new_work(const shutdown_deadline& deadline);
  void unmap_arenas(const shutdown_deadline& deadline, bool at_exit);
  void drain_rdma(const shutdown_deadline& deadline);
  void map_first_arena();
  peer_hello hello() const;

  node_config cfg_;
  uint64_t worker_id_;
  uint64_t incarnation_;
  uint16_t port_ = 0;
  uint16_t metrics_port_ = 0;
  bool stopped_ = false;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<path_metrics> paths_;
  std::unique_ptr<owner_metrics> owner_metrics_;
  std::unique_ptr<consumer_metrics> consumer_metrics_;
  std::unique_ptr<rdma_metrics> rdma_metrics_;
  std::unique_ptr<messenger_metrics> messenger_metrics_;
  std::unique_ptr<staging_metrics> staging_metrics_;
  std::shared_ptr<remote_staging_metrics> remote_staging_metrics_;
  std::unique_ptr<caf_config> sys_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::shared_ptr<node_context> ctx_;
  std::shared_ptr<const ucx_context> ucx_;
  ucx_engine_ref engine_;
  caf::actor copier_; // whole-payload copies off the cooperative threads
  caf::actor prefiller_; // prepares warm room for the next get result (or none)
  caf::actor warm_reaper_; // lets warm buffers idle too long go (or none)
  arena_pool_actor pool_;
  std::vector<char> ucx_address_;
  gateway_actor gateway_;
  messenger_actor messenger_;
  caf::error staging_error_; // a staging option the node refuses at start
  caf::error tls_error_;     // a TLS configuration the node refuses
  caf::actor membership_;    // dials the join targets and the members
  caf::actor prober_;        // bounded TCP probes before CAF dials (tcp_probe.hpp)
  std::shared_ptr<std::atomic<bool>> joined_; // every join target reached
  std::shared_ptr<staging::local_stager> stager_;
  caf::actor staging_workers_;
  std::shared_ptr<staging::device_exposures> exposures_;
  std::shared_ptr<remote_staging_stats> remote_stats_;
  caf::actor staging_source_; // answers peers' Pins (off: refuses them)
  caf::actor remote_stagers_;
  std::shared_ptr<std::atomic<uint16_t>> published_port_;
  std::unique_ptr<http_endpoint> http_;
};

} // namespace ferry
