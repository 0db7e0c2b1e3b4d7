// ActorFixture: one actor system on CAF's test coordinator (virtual time)
// with a node's owner, gateway and consumer service, and helpers that send a
// request from a fresh actor and run the system until it is idle.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <tuple>

#include <caf/all.hpp>
#include <prometheus/registry.h>

#include "actors/cluster/gateway.hpp"
#include "actors/rendezvous/consumer_metrics.hpp"
#include "actors/rendezvous/consumer_service.hpp"
#include "actors/rendezvous/owner.hpp"
#include "actors/rendezvous/owner_metrics.hpp"
#include "actors/rendezvous/path_metrics.hpp"
#include "protocol/type_registry.hpp"

namespace ferry::test {

using namespace std::chrono_literals;

constexpr uint64_t worker = 7;
constexpr uint64_t chunk = 1024;

struct test_config : caf::actor_system_config {
  test_config() {
    register_protocol_types(*this);
    set("scheduler.policy", caf::atom("testing"));
    set("logger.console", caf::atom("none"));
  }
};

/// The outcome of one request: the reply's values or an error.
template <class... Rs>
struct call_result {
  std::optional<std::tuple<Rs...>> values;
  caf::error error;
  bool done() const { return values.has_value() || static_cast<bool>(error); }
};

struct ActorFixture : ::testing::Test {
  explicit ActorFixture(owner_config ocfg = make_owner_config())
    : sys(cfg),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
      paths(registry),
      om(registry, paths),
      cm(registry, paths) {
    ctx = std::make_shared<node_context>();
    ctx->worker_id = worker;
    ctx->owner = spawn_owner(sys, worker, ocfg, &om);
    gateway_params gp;
    gp.identity.worker_id = worker;
    gp.node = ctx;
    gp.directory = peers;
    gw = spawn_gateway(sys, gp);
    ctx->consumer = spawn_consumer_service(sys, consumer_ctx());
    sched.run();
  }

  /// What the node's consumer service is spawned with.
  consumer_context consumer_ctx() {
    consumer_context cc;
    cc.directory = gw;
    cc.peers = peers;
    cc.cfg.pull_window = 2;
    cc.metrics = &cm;
    return cc;
  }

  ~ActorFixture() override {
    caf::anon_send_exit(gw, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(ctx->consumer, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(ctx->owner, caf::exit_reason::user_shutdown);
    sched.run();
  }

  static owner_config make_owner_config() {
    owner_config c;
    c.chunk_size = chunk;
    c.sweep_period = 100ms;
    return c;
  }

  /// Sends a request from a fresh actor and runs the system until idle.
  template <class... Rs, class Dest, class... Ts>
  std::shared_ptr<call_result<Rs...>> start_call(Dest dest, Ts... xs) {
    auto out = std::make_shared<call_result<Rs...>>();
    // (An argument, because CAF 0.17 dereferences a null tuple for an
    // argument-less spawn, which UBSan reports.)
    sys.spawn(
      [=](caf::event_based_actor* self, int) {
        self->request(dest, caf::infinite, xs...)
          .then([=](Rs&... rs) { out->values = std::make_tuple(rs...); },
                [=](caf::error& err) { out->error = std::move(err); });
      },
      0);
    sched.run();
    return out;
  }

  template <class... Rs, class Dest, class... Ts>
  call_result<Rs...> call(Dest dest, Ts... xs) {
    auto out = start_call<Rs...>(dest, xs...);
    EXPECT_TRUE(out->done()) << "request did not finish";
    return *out;
  }

  data_handle stage(size_t n, uint64_t ttl_ms = 0) {
    byte_buffer b(n);
    for (size_t i = 0; i < n; ++i)
      b[i] = static_cast<char>(i % 251);
    auto r = call<data_handle>(ctx->owner, register_atom::value, b, ttl_ms);
    return std::get<0>(*r.values);
  }

  std::string owner_stat() {
    return std::get<0>(*call<std::string>(ctx->owner, stat_atom::value).values);
  }

  test_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  prometheus::Registry registry;
  path_metrics paths;
  owner_metrics om;
  consumer_metrics cm;
  std::shared_ptr<node_context> ctx;
  std::shared_ptr<peer_directory> peers = std::make_shared<peer_directory>();
  gateway_actor gw;
};

} // namespace ferry::test
