// A node's stop, in the spec's order under one deadline: the front door
// refuses new work, the RDMA sweep drains registered memory while peers can
// still pull, the arenas are unmapped, the gateway is unpublished, the
// actors stop in dependency order and the actor system is joined (or, when
// actors do not stop, left behind and named).
#include "runtime/node.hpp"

#include <algorithm>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "protocol/errors.hpp"
#include "runtime/http_endpoint.hpp"
#include "runtime/shutdown_deadline.hpp"
#include "staging/local_stager.hpp"

namespace ferry {

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
  if (remote_stagers_) { // waiting sessions end unpinned; running ones Unpin at their next step
    caf::scoped_actor self{*sys_};
    self->request(remote_stagers_, deadline.left(), stop_work_atom::value)
      .receive([](bool) {},
               [](caf::error& e) {
                 spdlog::warn("shutdown: remote staging sessions still running: {}",
                              describe(e));
               });
  }
  stop_and_wait("remote staging shards", remote_stagers_);
  if (staging_source_) { // Pins refused from now on; each session drains and ends
    std::vector<caf::actor> sessions;
    caf::scoped_actor self{*sys_};
    self->request(staging_source_, deadline.left(), stop_work_atom::value)
      .receive([&](std::vector<caf::actor>& live) { sessions = std::move(live); },
               [&](caf::error&) {});
    for (auto& s : sessions)
      stop_and_wait("remote staging session", s);
  }
  stop_and_wait("staging source", staging_source_);
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
  stop_and_wait("result prefiller", prefiller_);
  stop_and_wait("warm buffer reaper", warm_reaper_);
  // What is still charged now (a region that did not drain) is named.
  unmap_arenas(deadline, true);
  stop_and_wait("arena pool", caf::actor_cast<caf::actor>(pool_));
  http_.reset();
  gateway_ = nullptr;
  messenger_ = nullptr;
  staging_workers_ = nullptr;
  remote_stagers_ = nullptr;
  staging_source_ = nullptr;
  membership_ = nullptr;
  prober_ = nullptr;
  copier_ = nullptr;
  prefiller_ = nullptr;
  warm_reaper_ = nullptr;
  pool_ = nullptr;
  engine_ = ucx_engine_ref{};
  if (ctx_ && ctx_->warm) // a worker's copy of the context may outlive the metrics
    ctx_->warm->close();
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
