// A node's construction (identity, metrics, the actor system's
// configuration, plain or TLS) and start (the HTTP endpoint, the published
// gateway, the join); the services it wires are node_services.cpp, dialling
// peers node_connect.cpp, its stop node_stop.cpp.
#include "runtime/node.hpp"


#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <random>
#include <fstream>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "actors/cluster/gateway.hpp"
#include "actors/cluster/lost_peers.hpp"
#include "actors/messenger/messenger_metrics.hpp"
#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rendezvous/consumer_metrics.hpp"
#include "actors/rendezvous/owner_metrics.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "actors/staging/remote_staging_metrics.hpp"
#include "actors/staging/remote_staging_stats.hpp"
#include "actors/staging/staging_metrics.hpp"
#include "protocol/errors.hpp"
#include "protocol/type_registry.hpp"
#include "runtime/http_endpoint.hpp"
#include "runtime/kill_switch.hpp"
#include "runtime/openssl_error_queue.hpp"
#include "runtime/shutdown_deadline.hpp"
#include "staging/local_stager.hpp"
#include "rdma/control_channel_choice.hpp"
#include "rdma/failure_reports_choice.hpp"
#include "rdma/one_sided_reads.hpp"

#ifdef FERRY_WITH_UCX
#  include "rdma/ucx_context.hpp"
#endif

namespace ferry {

struct node::caf_config : caf::actor_system_config {};

namespace {

/// All three TLS files set and readable (CAF would otherwise fail later,
/// at a handshake, with less to say).
caf::error check_tls_files(const node_config& cfg) {
  std::pair<const char*, const std::string*> files[] = {
    {"--tls-ca", &cfg.tls_ca}, {"--tls-cert", &cfg.tls_cert}, {"--tls-key", &cfg.tls_key}};
  for (auto& [flag, path] : files) {
    if (path->empty())
      return make_error(errc::invalid_argument,
                        std::string{"TLS needs --tls-ca, --tls-cert and --tls-key; "}
                          + flag + " is missing");
    if (!std::ifstream{*path})
      return make_error(errc::io_error,
                        std::string{flag} + ": cannot read '" + *path + "'");
  }
  return caf::none;
}

uint64_t random_nonzero_u64() {
  static thread_local std::mt19937_64 gen{std::random_device{}()
                                          ^ static_cast<uint64_t>(
                                            std::chrono::steady_clock::now()
                                              .time_since_epoch()
                                              .count())};
  uint64_t x = 0;
  while (x == 0)
    x = gen();
  return x;
}

} // namespace

/// Keeps glibc from handing chunk-sized buffers back to the kernel after
/// each burst and from mapping every mid-sized buffer afresh: on guests where
/// a page fault costs ~20 us, re-faulting them dominated the chunked path.
/// The mmap threshold sits at glibc's maximum (32 MiB): results up to that
/// size reuse warm heap pages (at 4 MiB, a fresh mapping per result made a
/// 4 MiB get ~10x slower than a 3 MiB one); larger ones get huge pages
/// (reserve_for_bulk).
static void tune_malloc_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
  });
}

node::node(node_config cfg, worker_registry workers, type_registrar extra_types)
  : cfg_(std::move(cfg)),
    worker_id_(random_nonzero_u64()),
    incarnation_(random_nonzero_u64()) {
  tune_malloc_once();
  // The kill switch is read once, here, for both roles.
  if (kill_switch_from_env())
    cfg_.rdma_enabled = false;
  if (kill_switch_engaged(std::getenv(emulated_gets_env)))
    cfg_.rdma_emulated_gets = true;
  registry_ = std::make_shared<prometheus::Registry>();
  paths_ = std::make_unique<path_metrics>(*registry_);
  owner_metrics_ = std::make_unique<owner_metrics>(*registry_, *paths_);
  consumer_metrics_ = std::make_unique<consumer_metrics>(*registry_, *paths_);
  rdma_metrics_ = std::make_unique<rdma_metrics>(*registry_);
  messenger_metrics_ = std::make_unique<messenger_metrics>(*registry_);
  staging_metrics_ = std::make_unique<staging_metrics>(*registry_);
  remote_staging_metrics_ = std::make_shared<remote_staging_metrics>(*registry_);

  sys_cfg_ = std::make_unique<caf_config>();
  register_protocol_types(*sys_cfg_);
  if (extra_types)
    extra_types(*sys_cfg_);
  sys_cfg_->load<caf::io::middleman>();
  if (cfg_.tls()) {
    // Every connection of this node goes through CAF's OpenSSL module, with
    // the peer's certificate verified against the CA; a broken TLS
    // configuration fails start(), never falls back to plain connections.
    tls_error_ = check_tls_files(cfg_);
    if (!tls_error_ && !openssl_error_queue_fix_active())
      tls_error_ = make_error(errc::io_error, "TLS: libssl's SSL_read/SSL_write not found");
    if (!tls_error_) {
      sys_cfg_->load<caf::openssl::manager>();
      sys_cfg_->openssl_cafile = cfg_.tls_ca;
      sys_cfg_->openssl_certificate = cfg_.tls_cert;
      sys_cfg_->openssl_key = cfg_.tls_key;
    }
  }
  sys_cfg_->set("scheduler.policy", caf::atom_from_string(cfg_.scheduler_policy));
  sys_cfg_->set("scheduler.max-threads", cfg_.effective_scheduler_threads());
  sys_cfg_->set("middleman.heartbeat-interval",
                caf::timespan{std::chrono::milliseconds{cfg_.heartbeat_interval_ms}});
  sys_cfg_->set("middleman.connection-timeout",
                caf::timespan{std::chrono::milliseconds{cfg_.connection_timeout_ms}});
  sys_cfg_->set("logger.console", caf::atom("none"));
  sys_ = std::make_unique<caf::actor_system>(*sys_cfg_);
  wire_services(std::move(workers));
}

void node::give_back(byte_buffer&& bytes) {
  if (ctx_)
    ctx_->give_back(std::move(bytes));
  else
    byte_buffer{}.swap(bytes);
}

std::vector<std::string> node::capabilities() const {
  std::vector<std::string> caps{"chunked"};
  if (has_ucx())
    caps.emplace_back("ucx");
#ifdef FERRY_WITH_UCX
  // Which peers share memory with this node (failure_reports_choice.hpp).
  if (has_ucx() && ucx_ && ucx_->has_shared_memory())
    caps.push_back(shared_memory_capability(this_machine_token()));
  // Which peers' GETs are one-sided reads (one_sided_reads.hpp).
  if (has_ucx() && ucx_ && ucx_->has_nic_rma())
    caps.emplace_back(nic_rma_capability);
#endif
  return caps;
}

node::~node() {
  stop();
}

prometheus::Registry& node::metrics_registry() {
  if (remote_stats_)
    remote_staging_metrics_->sync(*remote_stats_);
  return *registry_;
}

caf::error node::start() {
  if (staging_error_)
    return staging_error_; // before anything is allocated or opened
  if (tls_error_)
    return tls_error_;
  if (cfg_.metrics_port >= 0) {
    try {
      auto published = published_port_;
      auto joined = joined_;
      http_ = std::make_unique<http_endpoint>(
        cfg_.bind_host, static_cast<uint16_t>(cfg_.metrics_port), registry_,
        [published, joined, listen = cfg_.listen]() -> std::string {
          if (listen && published->load() == 0)
            return "the gateway is not published yet";
          if (!joined->load())
            return "the --join members are not reached yet";
          return {};
        },
        [metrics = remote_staging_metrics_, stats = remote_stats_] {
          if (stats)
            metrics->sync(*stats);
        });
      metrics_port_ = http_->port();
    } catch (const std::exception& e) {
      return make_error(errc::io_error, std::string{"metrics endpoint on port "}
                                          + std::to_string(cfg_.metrics_port)
                                          + ": " + e.what());
    }
  }
  if (cfg_.map_arena_at_start)
    map_first_arena();
  if (cfg_.listen) {
    auto port = cfg_.tls() ? caf::openssl::publish(gateway_, cfg_.port,
                                                   cfg_.bind_host.c_str(), true)
                           : sys_->middleman().publish(gateway_, cfg_.port,
                                                       cfg_.bind_host.c_str(), true);
    if (!port)
      return make_error(errc::io_error, "cannot listen on " + cfg_.bind_host
                                          + ":" + std::to_string(cfg_.port)
                                          + ": " + sys_->render(port.error()));
    port_ = *port;
    published_port_->store(port_);
  }
  for (const auto& ep : cfg_.join)
    if (auto parsed = parse_endpoint(ep); !parsed)
      return make_error(errc::invalid_argument, "--join: " + describe(parsed.error()));
  // Membership dials the join targets and every member they name, in the
  // background (retried until reached; /readyz waits for them).
  caf::anon_send(membership_, join_atom::value, gateway_,
                 cfg_.listen ? endpoint_text(cfg_.advertised_host(), port_) : std::string{});
  return caf::none;
}

caf::io::middleman_actor node::connector() const {
  return sys_->has_openssl_manager() ? sys_->openssl_manager().actor_handle()
                                     : sys_->middleman().actor_handle();
}

peer_hello node::hello() const {
  peer_hello mine;
  mine.worker_id = worker_id_;
  mine.incarnation = incarnation_;
  mine.capabilities = capabilities();
  // The control channel: a fresh token for this hello's peer to put in its
  // frames to this node (the peer's gateway answers with its own).
  if (engine_ && engine_.control_channel())
    mine.capabilities.push_back(control_token_capability(fresh_control_token()));
  // The peers this node lost, which may not know (actors/cluster/lost_peers.hpp).
  if (ctx_ && ctx_->lost)
    if (auto lost = ctx_->lost->capability())
      mine.capabilities.push_back(std::move(*lost));
  mine.ucx_address = ucx_address_;
  mine.host = cfg_.advertised_host();
  mine.port = published_port_->load();
  mine.gateway = caf::actor_cast<caf::actor>(gateway_);
  mine.owner = caf::actor_cast<caf::actor>(ctx_->owner);
  mine.messenger = ctx_->messenger;
  return mine;
}

void node::map_first_arena() {
  if (!pool_)
    return;
  // A block of one byte maps the first pooled arena; the pool keeps the
  // arena mapped when the block goes back.
  caf::scoped_actor self{*sys_};
  self->request(pool_, cfg_.request_timeout(), pool_alloc_atom::value, uint64_t{1}, true)
    .receive([](pinned_ptr&) {},
             [](caf::error& err) {
               spdlog::warn("no arena mapped at start (messenger payloads staged "
                            "here take the chunked path): {}",
                            describe(err));
             });
}

} // namespace ferry
