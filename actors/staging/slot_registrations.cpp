#include "actors/staging/slot_registrations.hpp"

#include <thread>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "protocol/errors.hpp"

namespace ferry {

caf::expected<slot_registrations> slot_registrations::make(caf::actor_system& sys,
                                                           const ucx_cross_means& means,
                                                           const std::vector<slot_memory>& slots,
                                                           std::chrono::milliseconds timeout) {
  slot_registrations out;
  out.means_ = means;
  caf::anon_send(means.engine.actor(), ucx_hold_atom::value, int64_t{1});
  means.engine.wake();
  caf::scoped_actor self{sys};
  for (auto& s : slots) {
    auto region = std::make_shared<external_region>(s.data, s.size);
    caf::error failed;
    self->request(means.pool, timeout, region_register_atom::value, region)
      .receive([](uint64_t) {}, [&](caf::error& e) { failed = std::move(e); });
    if (failed) {
      out.retire(timeout);
      return failed;
    }
    out.regions_.push_back(std::move(region));
  }
  return out;
}

stage_slot_key slot_registrations::key(size_t index) const {
  auto& r = *regions_.at(index);
  stage_slot_key k;
  k.address = r.address();
  if (auto rkey = r.rkey())
    k.rkey = *rkey;
  return k;
}

std::vector<stage_slot_key> slot_registrations::keys() const {
  std::vector<stage_slot_key> out;
  for (size_t i = 0; i < regions_.size(); ++i)
    out.push_back(key(i));
  return out;
}

std::vector<bool> slot_registrations::retire(std::chrono::milliseconds bound) {
  if (!means_.engine)
    return {};
  auto until = std::chrono::steady_clock::now() + bound;
  auto ms = static_cast<uint64_t>(bound.count());
  for (auto& r : regions_)
    caf::anon_send(means_.pool, region_unregister_atom::value, r, ms);
  std::vector<bool> unmapped;
  for (auto& r : regions_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
    unmapped.push_back(r->wait_released(std::max(left, std::chrono::milliseconds{1}))
                         .has_value());
  }
  regions_.clear();
  caf::anon_send(means_.engine.actor(), ucx_hold_atom::value, int64_t{-1});
  means_.engine.wake();
  means_.engine = {};
  return unmapped;
}

pinned_ptr slot_landing::lend(char* data, uint64_t size) const {
  held_->fetch_add(1);
  // No key: a local destination; the release is the engine letting it go.
  return std::make_shared<pinned_block>(data, size, reinterpret_cast<uintptr_t>(data),
                                        std::make_shared<const std::vector<uint8_t>>(), 0,
                                        [held = held_] { held->fetch_sub(1); });
}

bool slot_landing::quiet(std::chrono::milliseconds bound) const {
  auto until = std::chrono::steady_clock::now() + bound;
  while (held_->load() > 0) {
    if (std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return true;
}

caf::error get_into_slot(caf::scoped_actor& self, const ucx_engine_ref& engine,
                         uint64_t worker, const stage_slot_key& key, uint64_t length,
                         const slot_landing& landing, char* dest,
                         std::chrono::milliseconds timeout) {
  if (!key.plausible())
    return make_error(errc::protocol_violation, "a slot key out of bounds");
  caf::error failed;
  auto pending = self->request(engine.actor(), timeout, ucx_get_atom::value, worker,
                               key.address, length, key.rkey, landing.lend(dest, length));
  engine.wake();
  pending.receive([](uint64_t) {}, [&](caf::error& e) { failed = std::move(e); });
  if (failed == caf::sec::request_timeout)
    return make_error(errc::get_abandoned, "the UCX GET of a peer's slot did not finish in time");
  return failed;
}

} // namespace ferry
