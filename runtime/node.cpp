#include "runtime/node.hpp"

#include <thread>

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <random>
#include <fstream>
#include <set>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "actors/rendezvous/consumer_metrics.hpp"
#include "actors/cluster/gateway.hpp"
#include "actors/cluster/membership.hpp"
#include "actors/cluster/tcp_probe.hpp"
#include "actors/messenger/messenger.hpp"
#include "actors/messenger/messenger_metrics.hpp"
#include "actors/rendezvous/owner.hpp"
#include "actors/rendezvous/bulk_copier.hpp"
#include "actors/rendezvous/owner_metrics.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "actors/rdma/rdma_metrics.hpp"
#include "actors/staging/staging_metrics.hpp"
#include "actors/staging/staging_workers.hpp"
#include "protocol/errors.hpp"
#include "protocol/type_registry.hpp"
#include "runtime/builtin_handlers.hpp"
#include "runtime/http_endpoint.hpp"
#include "runtime/openssl_error_queue.hpp"
#include "runtime/shutdown_deadline.hpp"
#include "runtime/kill_switch.hpp"
#include "staging/cuda_driver.hpp"
#include "staging/fake_cuda.hpp"
#include "staging/local_stager.hpp"
#include "staging/numa_placement.hpp"

#ifdef FERRY_WITH_UCX
#  include "rdma/ucx_context.hpp"
#  include "rdma/ucx_region.hpp"
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
  registry_ = std::make_shared<prometheus::Registry>();
  paths_ = std::make_unique<path_metrics>(*registry_);
  owner_metrics_ = std::make_unique<owner_metrics>(*registry_, *paths_);
  consumer_metrics_ = std::make_unique<consumer_metrics>(*registry_, *paths_);
  rdma_metrics_ = std::make_unique<rdma_metrics>(*registry_);
  messenger_metrics_ = std::make_unique<messenger_metrics>(*registry_);
  staging_metrics_ = std::make_unique<staging_metrics>(*registry_);

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

  if (cfg_.ucx)
    start_ucx();

  auto ocfg = cfg_.owner_config();
  ocfg.rdma_configured = has_ucx();
  // Registering in place costs microseconds where nothing is pinned; a
  // copy into an arena costs a pass over the payload.
  if (has_ucx() && ucx_->registers_without_pinning())
    ocfg.register_in_place_min = cfg_.register_in_place_min;
  ctx_ = std::make_shared<node_context>();
  ctx_->worker_id = worker_id_;
  ctx_->request_timeout = cfg_.request_timeout();
  ctx_->transfer_timeout = cfg_.transfer_timeout();
  copier_ = spawn_bulk_copier(*sys_, 2);
  auto directory = std::make_shared<peer_directory>();
  ctx_->owner = spawn_owner(*sys_, worker_id_, ocfg, owner_metrics_.get(),
                            owner_rdma_links{pool_, engine_, rdma_metrics_.get(), copier_,
                                             directory});

  start_staging();

  gateway_params gp;
  gp.identity.worker_id = worker_id_;
  gp.identity.incarnation = incarnation_;
  gp.identity.capabilities = capabilities();
  gp.identity.ucx_address = ucx_address_;
  gp.identity.host = cfg_.advertised_host();
  gp.node = ctx_;
  gp.workers = std::move(workers);
  gp.engine = engine_;
  gp.directory = directory;
  auto peers = directory;
  published_port_ = gp.port;
  membership_params mship;
  mship.join = cfg_.join;
  mship.own_hello = [this] { return hello(); };
  mship.connector = connector();
  prober_ = spawn_tcp_prober(*sys_);
  mship.prober = prober_;
  mship.gateway_signature = sys_->message_types<gateway_actor>();
  mship.request_timeout = cfg_.request_timeout();
  joined_ = mship.ready;
  membership_ = spawn_membership(*sys_, std::move(mship));
  gp.membership = membership_;
  if (auto stager = stager_)
    gp.staging_status = [stager] { return stager->status_json(); };
  gateway_ = spawn_gateway(*sys_, std::move(gp));

  consumer_context cc;
  cc.directory = gateway_;
  cc.peers = std::move(directory);
  cc.cfg = cfg_.consumer_config();
  cc.cfg.rdma_configured = has_ucx();
  cc.cfg.get_into_result =
    cfg_.gets_into_result && has_ucx() && ucx_->registers_without_pinning();
  cc.metrics = consumer_metrics_.get();
  cc.reader = make_node_rdma_reader(pool_, engine_);
  cc.rdma = rdma_metrics_.get();
  cc.copier = copier_;
  if (cfg_.warm_buffer_bytes > 0)
    cc.warm = std::make_shared<warm_buffers>(
      cfg_.warm_buffer_bytes,
      warm_buffer_metrics{messenger_metrics_->warm_buffer_bytes,
                          messenger_metrics_->warm_buffer_reuses});
  ctx_->consumer = spawn_consumer_service(*sys_, cc);

  messenger_params mp;
  mp.worker_id = worker_id_;
  mp.owner = ctx_->owner;
  mp.consumer = ctx_->consumer;
  mp.peers = std::move(peers);
  mp.cfg = cfg_.messenger_config();
  mp.metrics = messenger_metrics_.get();
  mp.warm = cc.warm;
  messenger_ = spawn_messenger(*sys_, std::move(mp));
  ctx_->messenger = caf::actor_cast<caf::actor>(messenger_);
  if (auto err = bind_builtin_handlers(*sys_, messenger_, cfg_.request_timeout()))
    spdlog::warn("the built-in handlers are not bound: {}", describe(err));
}

/// The staging layer: its options checked (a bad one fails start(), before
/// anything is allocated), the CUDA api chosen and loaded, the stager and
/// its workers. Without a driver or a GPU the node runs with staging off
/// and says why (the log, `ferry stat`, ferry_staging_available).
void node::start_staging() {
  staging::staging_config sc;
  sc.chunk_size = cfg_.staging_chunk_size;
  sc.chunk_count = cfg_.staging_chunk_count;
  auto where = staging::staging_location::parse(cfg_.staging_location);
  if (!where) {
    staging_error_ = make_error(errc::invalid_argument,
                                "--staging-location must be any, auto or cpu:N (got '"
                                  + cfg_.staging_location + "')");
    return;
  }
  sc.location = *where;
  if (auto why = sc.check(); !why.empty()) {
    staging_error_ = make_error(errc::invalid_argument, why);
    return;
  }
  if (where->k == staging::staging_location::kind::cpu) {
    auto view = staging::read_numa_view();
    auto chosen = view ? staging::select_staging_node(*where, *view, std::nullopt)
                       : caf::expected<staging::node_choice>{view.error()};
    if (!chosen) {
      staging_error_ = chosen.error(); // names cpu:N and the eligible nodes
      return;
    }
  }
  std::shared_ptr<staging::cuda_api> api;
#ifdef FERRY_TEST_HOOKS
  if (cfg_.test_fake_cuda)
    api = std::make_shared<staging::fake_cuda>();
#endif
  if (!api)
    api = staging::load_cuda_driver();
  if (auto why = api->unavailable_reason(); !why.empty())
    spdlog::info("GPU staging is off: {}", why);
  stager_ = std::make_shared<staging::local_stager>(api, sc);
  staging_workers_params wp;
  wp.stager = stager_;
  wp.workers = cfg_.staging_workers;
  wp.max_queued = cfg_.staging_max_queued;
  wp.metrics = staging_metrics_.get();
  staging_workers_ = spawn_staging_workers(*sys_, std::move(wp));
}

void node::start_ucx() {
#ifdef FERRY_WITH_UCX
  // A node on loopback keeps UCX on loopback too (else UCX's tcp transport
  // also opens lanes on every other interface), unless the user chose.
  const auto& host = cfg_.bind_host;
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1")
    setenv("UCX_NET_DEVICES", "lo", 0);
  auto ctx = ucx_context::create();
  if (!ctx) {
    spdlog::warn("UCX unavailable, the RDMA path is off: {}", ctx.error_message());
    return;
  }
  ucx_ = std::make_shared<const ucx_context>(std::move(*ctx));
  ucx_engine_start es;
  es.context = ucx_;
  es.faults.fail_gets = cfg_.test_fail_gets;
  es.faults.get_delay = std::chrono::milliseconds{cfg_.test_get_delay_ms};
  es.faults.no_progress = cfg_.test_stall_ucx;
  es.get_timeout = cfg_.transfer_timeout();
  es.metrics = rdma_metrics_.get();
  es.worker_id = worker_id_;
  if (cfg_.ep_idle_timeout_ms > 0)
    es.ep_idle_timeout = std::chrono::milliseconds{cfg_.ep_idle_timeout_ms};
  es.eager_endpoints = cfg_.eager_endpoints;
  // Rollback lever for the consumer's warm RDMA state (and the "before" of
  // its measurement), read once here like the kill switch.
  if (kill_switch_engaged(std::getenv("FERRY_RDMA_WARM_DISABLE"))) {
    es.disable_warm_state();
    spdlog::info("FERRY_RDMA_WARM_DISABLE: no rkey cache, no warm destination");
  }
  engine_ = spawn_ucx_engine(*sys_, es, ucx_address_);
  if (!engine_) {
    ucx_.reset();
    return;
  }
  arena_pool_config pc;
  pc.initial_arena_bytes = cfg_.initial_arena_bytes;
  pc.max_arena_bytes = cfg_.max_arena_bytes;
  pc.dedicated_arena_min = cfg_.dedicated_arena_min;
  if (cfg_.arena_reclaim_after_ms > 0)
    pc.reclaim_after = std::chrono::milliseconds{cfg_.arena_reclaim_after_ms};
  pc.retain_arena_bytes = cfg_.retain_arena_bytes;
  pc.lease_timeout = cfg_.effective_lease_timeout();
  pool_ = spawn_arena_pool(*sys_, pc, make_ucx_mapper(ucx_),
                           cfg_.registered_bytes_budget, rdma_metrics_.get(),
                           make_ucx_external_mapper(ucx_));
  spdlog::debug("UCX transports: {}", ucx_->describe_transports());
#endif
}

std::vector<std::string> node::capabilities() const {
  std::vector<std::string> caps{"chunked"};
  if (has_ucx())
    caps.emplace_back("ucx");
  return caps;
}

node::~node() {
  stop();
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
  mine.ucx_address = ucx_address_;
  mine.host = cfg_.advertised_host();
  mine.port = published_port_->load();
  mine.gateway = caf::actor_cast<caf::actor>(gateway_);
  mine.owner = caf::actor_cast<caf::actor>(ctx_->owner);
  mine.messenger = ctx_->messenger;
  return mine;
}

caf::expected<peer_hello> node::connect(const std::string& endpoint) {
  auto ep = parse_endpoint(endpoint);
  if (!ep)
    return ep.error();
  return connect(ep->first, ep->second);
}

/// The gateway published at host:port, within `timeout`. (The middleman's
/// own remote_actor waits without a bound, and for minutes when the port
/// publishes something that is not a gateway.)
caf::expected<gateway_actor> node::dial_gateway(const std::string& host, uint16_t port) {
  // Dials in all, while the request timeout lasts, when CAF cuts them.
  constexpr int max_dial_attempts = 16;
  using clock = std::chrono::steady_clock;
  auto where = host + ":" + std::to_string(port);
  // CAF's connect would block its middleman for minutes on an address that
  // drops packets (actors/cluster/tcp_probe.hpp): probe it within the bound first.
  if (auto err = probe_tcp(host, port, cfg_.request_timeout()))
    return make_error(is(err, errc::timeout) ? errc::timeout : errc::io_error,
                      "cannot connect to " + where + ": " + describe(err));
  auto deadline = clock::now() + cfg_.request_timeout();
  auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()),
                    std::chrono::milliseconds{1});
  };
  caf::expected<gateway_actor> result = make_error(errc::timeout);
  // CAF 0.17.6 starts a dialled connection's heartbeat clock at zero, so a
  // heartbeat tick that comes before the other side's BASP handshake cuts
  // the connection at once with sec::connection_timeout (seen with TLS,
  // whose handshake takes longer; docs/known-issues.md). A tick has just
  // passed then, so dialling again has a whole heartbeat interval.
  for (int attempt = 1;; ++attempt) {
    bool cut_by_heartbeat = false;
    caf::scoped_actor self{*sys_};
    self->request(connector(), left(), caf::connect_atom::value, host, port)
      .receive(
        [&](const caf::node_id&, caf::strong_actor_ptr& remote,
            const std::set<std::string>& ifs) {
          if (!remote)
            result = make_error(errc::io_error, "nothing is published at " + where);
          else if (ifs != sys_->message_types<gateway_actor>())
            result = make_error(errc::io_error,
                                "the actor published at " + where
                                  + " is not a ferry node's gateway");
          else
            result = caf::actor_cast<gateway_actor>(std::move(remote));
        },
        [&](caf::error& err) {
          cut_by_heartbeat = err == caf::sec::connection_timeout;
          result = make_error(err == caf::sec::request_timeout ? errc::timeout
                                                               : errc::io_error,
                              "cannot connect to " + where + ": " + sys_->render(err));
        });
    if (!cut_by_heartbeat || attempt == max_dial_attempts || clock::now() >= deadline)
      return result;
    spdlog::debug("connect to {}: cut by a heartbeat tick during the handshake, dialling again",
                  where);
  }
}

caf::expected<peer_hello> node::connect(const std::string& host, uint16_t port) {
  if (tls_error_)
    return tls_error_;
  auto remote = dial_gateway(host, port);
  if (!remote)
    return remote.error();
  auto mine = hello();
  caf::scoped_actor self{*sys_};
  caf::expected<peer_hello> result = make_error(errc::timeout);
  self->request(*remote, cfg_.request_timeout(), hello_atom::value, mine)
    .receive([&](peer_hello& theirs) { result = std::move(theirs); },
             [&](caf::error& err) {
               result = make_error(errc::io_error,
                                   "hello to " + host + ":"
                                     + std::to_string(port)
                                     + " failed: " + sys_->render(err));
             });
  if (!result)
    return result;
  // Keep the host we dialled: it is reachable from here by definition.
  result->host = host;
  result->port = port;
  self->request(gateway_, cfg_.request_timeout(), add_peer_atom::value, *result)
    .receive([](caf::ok_atom) {},
             [&](caf::error& err) { result = std::move(err); });
  return result;
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

void node::drain_rdma(const shutdown_deadline& deadline) {
  if (!pool_)
    return;
  // The RDMA sweep runs first, while peers can still pull: the owner stops
  // answering with descriptors and copies its arena slots to plain memory;
  // the pool refuses new memory, waits (bounded) for the slots staged in
  // external regions, and unregisters every region.
  caf::scoped_actor self{*sys_};
  self->request(ctx_->owner, deadline.left(), drain_atom::value)
    .receive([](uint64_t demoted) {
               if (demoted > 0)
                 spdlog::info("shutdown: {} pinned slots copied to plain memory",
                              demoted);
             },
             [](caf::error& err) {
               spdlog::warn("shutdown: the owner did not drain: {}", describe(err));
             });
  auto budget = deadline.left();
  self->request(pool_, budget + std::chrono::seconds{5}, drain_atom::value,
                static_cast<uint64_t>(budget.count()))
    .receive(
      [](bool drained) {
        if (!drained)
          spdlog::warn("shutdown: registered regions still had staged slots "
                       "after the drain budget; they were unregistered anyway");
      },
      [](caf::error& err) {
        spdlog::warn("shutdown: the region sweep did not finish: {}", describe(err));
      });
}

void node::refuse_new_work(const shutdown_deadline& deadline) {
  if (!gateway_)
    return;
  caf::scoped_actor self{*sys_};
  self->request(gateway_, std::min(cfg_.request_timeout(), deadline.left()),
                stop_work_atom::value)
    .receive([](caf::ok_atom) {},
             [](caf::error& err) {
               spdlog::warn("shutdown: the gateway did not stop taking work: {}",
                            describe(err));
             });
}

void node::unmap_arenas(const shutdown_deadline& deadline, bool at_exit) {
  if (!pool_)
    return;
  // A block still out (a lease's, a caller's) keeps its arena's pages
  // until it goes: they are never freed under it.
  const char* when = at_exit ? "at exit" : "after the drain";
  caf::scoped_actor self{*sys_};
  self->request(pool_, deadline.left(), pool_unmap_all_atom::value)
    .receive(
      [when, at_exit](uint64_t left) {
        // After the drain, a block an RDMA lease's GET may still read stays.
        spdlog::log(left == 0 || !at_exit ? spdlog::level::info : spdlog::level::err,
                    "shutdown: registered bytes {}: {}", when, left);
      },
      [](caf::error& err) {
        spdlog::error("shutdown: the arenas were not unmapped: {}", describe(err));
      });
}

void node::stop() {
  if (stopped_ || !sys_)
    return;
  stopped_ = true;
  // One deadline for every step (the spec's shutdown_timeout); a step
  // reached after it still gets 100 ms.
  shutdown_deadline deadline{std::chrono::milliseconds{cfg_.shutdown_timeout_ms},
                             std::chrono::milliseconds{100}};
  // The spec's order: the front door refuses new work; the RDMA sweep runs
  // while peers can still pull (the owner answers chunked, `draining`, its
  // lease reaper stops, pinned slots are copied to plain memory; the pool
  // gates registrations, drains and unregisters the regions) and every
  // arena is unmapped; then the control plane stops with what is left.
  refuse_new_work(deadline);
  drain_rdma(deadline);
  unmap_arenas(deadline, false);
  if (port_ != 0) {
    // Through the middleman actor that published it (CAF's OpenSSL
    // unpublish helper does not compile in 0.17.6).
    caf::scoped_actor self{*sys_};
    self->request(connector(), std::min(cfg_.request_timeout(), deadline.left()),
                  caf::unpublish_atom::value,
                  caf::actor_cast<caf::actor_addr>(gateway_), port_)
      .receive([] {},
               [](caf::error& err) {
                 spdlog::warn("shutdown: unpublish: {}", describe(err));
               });
  }
  // Stop in order, within what is left of the deadline: the front door and
  // the consumers first, then the UCX engine (no GET runs after it), then
  // the owner (its slots return their blocks), then the pool, which unmaps
  // what is left.
  auto stop_and_wait = [&](const char* what, const caf::actor& a) {
    if (!a)
      return;
    auto bound = deadline.left();
    caf::scoped_actor self{*sys_};
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
    self->receive([](const caf::down_msg&) {},
                  caf::after(bound) >> [&] {
                    spdlog::warn("shutdown: the {} did not stop within {} ms", what,
                                 bound.count());
                  });
  };
  stop_and_wait("membership", membership_);
  stop_and_wait("TCP prober", prober_);
  stop_and_wait("gateway", caf::actor_cast<caf::actor>(gateway_));
  stop_and_wait("messenger", caf::actor_cast<caf::actor>(messenger_));
  stop_and_wait("consumer service", caf::actor_cast<caf::actor>(ctx_->consumer));
  stop_and_wait("staging workers", staging_workers_);
  if (stager_)
    stager_->close(); // idle chunks go; a retained one keeps its memory
  // The UCX engine goes before the owner: over an emulated transport
  // (tcp) the engine's worker serves peers' GETs from our memory, and the
  // owner's end frees the blocks a late GET may still name.
  if (engine_) {
    caf::anon_send_exit(engine_.actor(), caf::exit_reason::user_shutdown);
    engine_.wake();
    stop_and_wait("UCX engine", engine_.actor());
  }
  stop_and_wait("owner", caf::actor_cast<caf::actor>(ctx_->owner));
  stop_and_wait("bulk copier", copier_);
  // What is still charged now (a region that did not drain) is named.
  unmap_arenas(deadline, true);
  stop_and_wait("arena pool", caf::actor_cast<caf::actor>(pool_));
  http_.reset();
  gateway_ = nullptr;
  messenger_ = nullptr;
  staging_workers_ = nullptr;
  membership_ = nullptr;
  prober_ = nullptr;
  copier_ = nullptr;
  pool_ = nullptr;
  engine_ = ucx_engine_ref{};
  ctx_.reset();
  destroy_system(deadline.left());
  ucx_.reset();
}

void node::destroy_system(std::chrono::milliseconds bound) {
  // The actor system's destructor waits for every actor, workers included:
  // it runs only once none is left, waiting at most `bound` for that. A
  // system whose actors do not stop is named and left behind (its memory
  // leaks; the process can still exit).
  auto until = std::chrono::steady_clock::now() + bound;
  while (sys_->registry().running() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  if (auto left = sys_->registry().running(); left > 0) {
    spdlog::warn("shutdown: {} actors (workers?) did not stop within {} ms; "
                 "the actor system is left behind",
                 left, bound.count());
    sys_.release();
    sys_cfg_.release(); // the system still reads its config
    return;
  }
  sys_.reset();
}

} // namespace ferry
