// The services a node wires at construction: the UCX engine and the arena
// pool (when UCX is on), the bulk copier and the owner, the staging layer
// and its workers, membership and the TCP prober, the gateway, the consumer
// service and the messenger with its built-in handlers. Each gets its part
// of the node's configuration and metrics and the handles of the others.
#include "runtime/node.hpp"

#include <cstdlib>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/cluster/gateway.hpp"
#include "actors/cluster/lost_peers.hpp"
#include "actors/cluster/membership.hpp"
#include "actors/cluster/tcp_probe.hpp"
#include "actors/messenger/messenger.hpp"
#include "actors/messenger/messenger_metrics.hpp"
#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rendezvous/bulk_copier.hpp"
#include "actors/rendezvous/owner.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "actors/rendezvous/result_prefiller.hpp"
#include "actors/rendezvous/warm_buffer_reaper.hpp"
#include "actors/staging/staging_metrics.hpp"
#include "actors/staging/remote_stager.hpp"
#include "actors/staging/staging_source.hpp"
#include "actors/staging/staging_workers.hpp"
#include "protocol/errors.hpp"
#include "rdma/control_channel_choice.hpp"
#include "runtime/builtin_handlers.hpp"
#include "runtime/kill_switch.hpp"
#include "staging/cuda_driver.hpp"
#include "staging/fake_cuda.hpp"
#include "staging/device_exposures.hpp"
#include "staging/local_stager.hpp"
#include "staging/remote_geometry.hpp"
#include "staging/numa_placement.hpp"

#ifdef FERRY_WITH_UCX
#  include "rdma/ucx_context.hpp"
#  include "rdma/ucx_region.hpp"
#endif

namespace ferry {

namespace {

/// The node's control-channel setting: FERRY_CONTROL_CHANNEL when it names
/// one, else the option's (checked by the command line: auto, ucx_am or caf).
/// A value that names none is said, not silently taken for another: the
/// variable's is ignored, a library caller's option means caf.
control_channel_setting control_channel_setting_of(const std::string& option) {
  if (const char* env = std::getenv("FERRY_CONTROL_CHANNEL")) {
    if (auto s = parse_control_channel_setting(env))
      return *s;
    spdlog::warn("FERRY_CONTROL_CHANNEL={} is not auto, ucx_am or caf: ignored", env);
  }
  if (auto s = parse_control_channel_setting(option))
    return *s;
  spdlog::warn("control channel setting '{}' is not auto, ucx_am or caf: caf", option);
  return control_channel_setting::caf;
}

} // namespace

void node::wire_services(worker_registry workers) {
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
  ctx_->lost = std::make_shared<lost_peers>();
  if (cfg_.warm_buffer_bytes > 0) // results given back, and handlers' payloads
    ctx_->warm = std::make_shared<warm_buffers>(
      cfg_.warm_buffer_bytes,
      warm_buffer_metrics{messenger_metrics_->warm_buffer_bytes,
                          messenger_metrics_->warm_buffer_reuses,
                          messenger_metrics_->warm_buffer_prefills});
  if (ctx_->warm && cfg_.warm_buffer_prefill)
    prefiller_ = spawn_result_prefiller(*sys_, ctx_->warm);
  if (ctx_->warm && cfg_.warm_buffer_idle_ms > 0)
    warm_reaper_ = spawn_warm_buffer_reaper(
      *sys_, ctx_->warm, std::chrono::milliseconds{cfg_.warm_buffer_idle_ms});
  copier_ = spawn_bulk_copier(*sys_, 2);
  auto directory = std::make_shared<peer_directory>();
  ctx_->owner = spawn_owner(*sys_, worker_id_, ocfg, owner_metrics_.get(),
                            owner_rdma_links{pool_, engine_, rdma_metrics_.get(), copier_,
                                             directory});
  if (engine_ && engine_.control_channel()) { // peers' channel calls go to the owner
    caf::anon_send(engine_.actor(), control_owner_atom::value,
                   caf::actor_cast<caf::actor>(ctx_->owner));
    engine_.wake();
  }

  start_staging(directory);

  gateway_params gp;
  gp.identity.worker_id = worker_id_;
  gp.identity.incarnation = incarnation_;
  gp.identity.capabilities = capabilities();
  gp.identity.ucx_address = ucx_address_;
  gp.identity.host = cfg_.advertised_host();
  gp.node = ctx_;
  gp.workers = std::move(workers);
  gp.engine = engine_;
  gp.emulated_gets = cfg_.rdma_emulated_gets;
  gp.directory = directory;
  gp.metrics = rdma_metrics_.get();
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
  if (auto stager = stager_) {
    auto remote = remote_stats_;
    gp.staging_status = [stager, remote] {
      auto j = nlohmann::json::parse(stager->status_json());
      if (remote)
        j["remote"] = nlohmann::json::parse(remote->json());
      return j.dump();
    };
  }
  gp.staging_source = staging_source_;
  gateway_ = spawn_gateway(*sys_, std::move(gp));
  if (engine_ && engine_.control_channel()) { // hears of peers that fell back to CAF
    caf::anon_send(engine_.actor(), control_watcher_atom::value,
                   caf::actor_cast<caf::actor>(gateway_));
    engine_.wake();
  }

  consumer_context cc;
  cc.directory = gateway_;
  cc.node_id = worker_id_;
  cc.peers = std::move(directory);
  cc.cfg = cfg_.consumer_config();
  cc.cfg.rdma_configured = has_ucx();
  cc.cfg.get_into_result =
    cfg_.gets_into_result && has_ucx() && ucx_->registers_without_pinning();
  cc.metrics = consumer_metrics_.get();
  cc.reader = make_node_rdma_reader(pool_, engine_);
  cc.rdma = rdma_metrics_.get();
  if (engine_ && engine_.control_channel())
    cc.channel = engine_;
  cc.copier = copier_;
  cc.warm = ctx_->warm;
  cc.prefill = prefiller_;
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
void node::start_staging(std::shared_ptr<const peer_directory> peers) {
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
  if (auto err = staging::check_pipeline_depth(cfg_.staging_pipeline_depth, sc.chunk_count)) {
    staging_error_ = std::move(err);
    return;
  }
  if (cfg_.remote_staging_shards == 0
      || cfg_.remote_staging_shards > max_remote_stager_shards) {
    staging_error_ = make_error(errc::invalid_argument,
                                "--remote-staging-shards must be 1 to "
                                  + std::to_string(max_remote_stager_shards));
    return;
  }
  if (cfg_.staging_cross != "auto" && cfg_.staging_cross != "caf") {
    staging_error_ = make_error(errc::invalid_argument, "--staging-cross must be auto or caf (got '"
                                                          + cfg_.staging_cross + "')");
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

  exposures_ = std::make_shared<staging::device_exposures>();
  remote_stats_ = std::make_shared<remote_staging_stats>();
  staging_source_params sp;
  sp.stager = stager_;
  sp.exposures = exposures_;
  sp.stats = remote_stats_;
  sp.epoch = incarnation_;
  sp.enabled = cfg_.remote_staging;
  sp.depth = cfg_.staging_pipeline_depth;
  auto slots = std::max<size_t>(1, std::min<size_t>(cfg_.staging_workers, sc.chunk_count));
  sp.slots = slots;
  sp.grace = cfg_.request_timeout();
  sp.max_budget = cfg_.transfer_timeout();
  ucx_cross_means ucx;
  ucx.pool = pool_;
  ucx.engine = engine_;
  ucx.peers = std::move(peers);
  ucx.enabled = cfg_.staging_cross != "caf" && cfg_.rdma_enabled;
  sp.ucx = ucx;
  staging_source_ = spawn_staging_source(*sys_, std::move(sp));
  remote_stager_params rp;
  rp.stager = stager_;
  rp.stats = remote_stats_;
  rp.shards = cfg_.remote_staging_shards;
  rp.max_queued = 64;
  rp.depth = cfg_.staging_pipeline_depth;
  rp.request_timeout = cfg_.request_timeout();
  rp.event_bound = std::chrono::milliseconds{30000}; // as a local copy's (staged_copy)
  rp.ucx = ucx;
  rp.exposures = exposures_;
  rp.worker_id = worker_id_;
  remote_stagers_ = spawn_remote_stagers(*sys_, std::move(rp));
  if (cfg_.remote_staging)
    spdlog::info("remote staging: peers may Pin this node's exposed device ranges "
                 "({} session slots, pipeline depth {})",
                 slots, cfg_.staging_pipeline_depth);
}

void node::start_ucx() {
#ifdef FERRY_WITH_UCX
  // A node on loopback keeps UCX on loopback too (else UCX's tcp transport
  // also opens lanes on every other interface), unless the user chose.
  const auto& host = cfg_.bind_host;
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1")
    setenv("UCX_NET_DEVICES", "lo", 0);
  // The stalled-UCX fault hooks need a worker nobody progresses for peers,
  // which the control channel's frames would: they keep CAF requests.
  auto setting = control_channel_setting_of(cfg_.control_channel);
  bool control_channel = serves_control_channel(setting, true, cfg_.tls())
                         && !cfg_.test_stall_ucx && cfg_.test_serve_delay_ms == 0;
  if (setting == control_channel_setting::automatic && cfg_.tls())
    spdlog::info("control channel off: with --tls-* the rendezvous calls stay inside "
                 "TLS as CAF requests (--control-channel ucx_am sends them over UCX)");
  ucx_context_config ucfg;
  ucfg.active_messages = control_channel; // the control channel's frames
  auto ctx = ucx_context::create(ucfg);
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
  es.faults.serve_delay = std::chrono::milliseconds{cfg_.test_serve_delay_ms};
  es.faults.drop_control_frames = cfg_.test_drop_control_frames;
  es.faults.fail_control_sends_after = cfg_.test_fail_control_sends_after;
  es.get_timeout = cfg_.transfer_timeout();
  es.metrics = rdma_metrics_.get();
  es.worker_id = worker_id_;
  if (cfg_.ep_idle_timeout_ms > 0)
    es.ep_idle_timeout = std::chrono::milliseconds{cfg_.ep_idle_timeout_ms};
  es.eager_endpoints = cfg_.eager_endpoints;
  es.control_channel = control_channel;
  if (es.control_channel)
    spdlog::debug("control channel: UCX active messages to peers that serve it");
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

} // namespace ferry
