#include "actors/owner.hpp"

#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "actors/lease_reaper.hpp"
#include "actors/owner_metrics.hpp"
#include "actors/path_metrics.hpp"
#include "actors/slot_store.hpp"
#include "protocol/errors.hpp"
#include "protocol/rv_messages.hpp"

namespace ferry {

namespace {

struct owner_state {
  owner_state() : store(0) {}
  slot_store store;
  owner_config cfg;
  owner_metrics* metrics = nullptr;
  lease_reaper_actor reaper;
  std::vector<caf::typed_response_promise<byte_buffer>> stalled; // test hook
  static inline const char* name = "ferry.owner";
};

using owner_ptr = owner_actor::stateful_pointer<owner_state>;

slot_store::time_point now(owner_ptr self) {
  return self->clock().now();
}

void update_gauges(owner_ptr self) {
  auto* m = self->state.metrics;
  if (!m)
    return;
  auto s = self->state.store.current_stats();
  m->slots->Set(static_cast<double>(s.slots));
  m->staged_bytes->Set(static_cast<double>(s.staged_bytes));
  m->leases->Set(static_cast<double>(s.leases));
}

void arm_reaper_if_needed(owner_ptr self) {
  if (self->state.store.has_deadlines())
    self->send(self->state.reaper, arm_atom::value);
}

void count_path(owner_ptr self, path_reason reason) {
  if (self->state.metrics)
    self->state.metrics->paths->count(transfer_path::chunked, reason);
}

/// The path decision for a chunked-only store: the first check that fails
/// names the reason (the spec's order: offer, registry, kill switch, ...).
path_reason chunked_reason(owner_ptr self, const rv_acquire_request& req) {
  if (!req.rdma)
    return path_reason::no_offer;
  if (!self->state.cfg.rdma_configured)
    return path_reason::not_configured;
  if (!self->state.cfg.rdma_enabled)
    return path_reason::kill_switch;
  return path_reason::not_pinned;
}

owner_actor::behavior_type owner(owner_ptr self, uint64_t worker_id,
                                 owner_config cfg, owner_metrics* metrics) {
  self->state.store = slot_store{worker_id, cfg.chunk_size};
  self->state.cfg = cfg;
  self->state.metrics = metrics;
  self->state.reaper = spawn_lease_reaper(self->system(), self,
                                          cfg.sweep_period);
  self->link_to(self->state.reaper);
  return {
    [=](rv_metadata_atom, const std::string& body) -> caf::result<std::string> {
      auto req = decode<rv_metadata_request>(body);
      if (!req)
        return req.error();
      auto md = self->state.store.metadata(req->handle);
      if (!md)
        return md.error();
      return encode(*md);
    },
    [=](rv_acquire_atom, const std::string& body) -> caf::result<std::string> {
      auto req = decode<rv_acquire_request>(body);
      if (!req)
        return req.error();
      auto lease_deadline = std::chrono::milliseconds{req->lease_ms};
      auto ready = self->state.store.acquire(req->handle, now(self),
                                             lease_deadline);
      if (!ready)
        return ready.error();
      count_path(self, chunked_reason(self, *req));
      arm_reaper_if_needed(self);
      update_gauges(self);
      rv_acquire_response resp;
      resp.ready = *ready;
      return encode(resp);
    },
    [=](rv_pull_atom, const std::string& body) -> caf::result<byte_buffer> {
      auto req = decode<rv_pull_request>(body);
      if (!req)
        return req.error();
      auto chunk = self->state.store.pull(req->transfer_id, req->index,
                                          now(self));
      if (!chunk)
        return chunk.error();
#ifdef FERRY_TEST_HOOKS
      if (req->index >= self->state.cfg.stall_pulls_from) {
        auto rp = self->make_response_promise<byte_buffer>();
        self->state.stalled.push_back(rp);
        return rp;
      }
#endif
      if (auto* m = self->state.metrics) {
        m->chunks_served->Increment();
        m->bytes_served->Increment(static_cast<double>(chunk->size));
      }
      return byte_buffer(chunk->data, chunk->data + chunk->size);
    },
    [=](rv_ref_atom, const std::string& body) -> caf::result<std::string> {
      auto req = decode<rv_ref_request>(body);
      if (!req)
        return req.error();
      auto count = self->state.store.ref(req->handle);
      if (!count)
        return count.error();
      return encode(rv_ref_response{*count});
    },
    [=](rv_detach_atom, const std::string& body) -> caf::result<std::string> {
      auto req = decode<rv_detach_request>(body);
      if (!req)
        return req.error();
      if (auto err = self->state.store.detach(req->handle, req->lease_id))
        return err;
      update_gauges(self);
      return std::string{"{}"};
    },
    [=](rv_release_atom, const std::string& body) -> caf::result<std::string> {
      auto req = decode<rv_release_request>(body);
      if (!req)
        return req.error();
      auto resp = self->state.store.release(req->handle, req->lease_id);
      if (!resp)
        return resp.error();
      update_gauges(self);
      return encode(*resp);
    },
    [=](rv_lease_renew_atom,
        const std::string& body) -> caf::result<std::string> {
      auto req = decode<rv_lease_renew_request>(body);
      if (!req)
        return req.error();
      if (auto err = self->state.store.renew(req->handle, req->lease_id,
                                             now(self)))
        return err;
      return std::string{"{}"};
    },
    [=](register_atom, byte_buffer& bytes, uint64_t ttl_ms) -> data_handle {
      std::optional<slot_store::duration> ttl;
      if (ttl_ms > 0)
        ttl = std::chrono::milliseconds{ttl_ms};
      auto h = self->state.store.register_data(std::move(bytes), now(self), ttl);
      arm_reaper_if_needed(self);
      update_gauges(self);
      return h;
    },
    [=](sweep_atom) -> bool {
      auto result = self->state.store.sweep(now(self));
      if (auto* m = self->state.metrics) {
        m->leases_expired->Increment(static_cast<double>(result.leases_expired));
        m->slots_expired->Increment(static_cast<double>(result.slots_expired));
      }
      update_gauges(self);
      return self->state.store.has_deadlines();
    },
    [=](stat_atom) -> std::string {
      auto s = self->state.store.current_stats();
      return nlohmann::json{{"slots", s.slots},
                            {"staged_bytes", s.staged_bytes},
                            {"leases", s.leases},
                            {"transfers", s.transfers}}
        .dump();
    },
  };
}

} // namespace

owner_actor spawn_owner(caf::actor_system& sys, uint64_t worker_id,
                        owner_config cfg, owner_metrics* metrics) {
  return sys.spawn(owner, worker_id, cfg, metrics);
}

} // namespace ferry
