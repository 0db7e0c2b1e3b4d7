#include "actors/staging/slot_registrations.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "protocol/errors.hpp"

namespace ferry {

slot_registrations::slot_registrations(slot_registrations&& other) noexcept
  : means_(std::exchange(other.means_, {})), regions_(std::move(other.regions_)),
    bound_(other.bound_) {
  other.regions_.clear();
}

slot_registrations& slot_registrations::operator=(slot_registrations&& other) noexcept {
  if (this != &other) {
    retire(bound_);
    means_ = std::exchange(other.means_, {});
    regions_ = std::move(other.regions_);
    other.regions_.clear();
    bound_ = other.bound_;
  }
  return *this;
}

slot_registrations::~slot_registrations() {
  if (means_.engine && !regions_.empty())
    spdlog::warn("remote staging: {} slot registrations retired by their destructor",
                 regions_.size());
  retire(bound_);
}

caf::expected<slot_registrations> slot_registrations::make(caf::actor_system& sys,
                                                           const ucx_cross_means& means,
                                                           const std::vector<slot_memory>& slots,
                                                           std::chrono::milliseconds timeout) {
  slot_registrations out;
  out.means_ = means;
  out.bound_ = timeout;
  caf::anon_send(means.engine.actor(), ucx_hold_atom::value, int64_t{1});
  means.engine.wake();
  caf::scoped_actor self{sys};
  auto until = std::chrono::steady_clock::now() + timeout;
  for (auto& s : slots) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
    auto region = std::make_shared<external_region>(s.data, s.size);
    caf::error failed;
    if (left.count() <= 0)
      failed = make_error(errc::timeout, "the slots' registrations ran out of time");
    else
      self->request(means.pool, left, region_register_atom::value, region)
        .receive([](uint64_t) {}, [&](caf::error& e) { failed = std::move(e); });
    if (failed) {
      // A late answer may still map it: unregistered after its register
      // (one sender, so in order); a refused one is left alone by the pool.
      self->send(means.pool, region_unregister_atom::value, region,
                 static_cast<uint64_t>(timeout.count()));
      // Within the one deadline: the regions made so far retire in what is
      // left of it (a refusal may come early; a timeout leaves nothing, and
      // their unregistrations still go, unwaited). No key of any went out.
      auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
      out.retire(std::max(rest, std::chrono::milliseconds{1}));
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
  // The pool ends each unregistration by half the bound (unmapped, drained
  // or not), so a live pool always confirms within the whole of it.
  auto until = std::chrono::steady_clock::now() + bound;
  auto ms = static_cast<uint64_t>(std::max<int64_t>(bound.count() / 2, 1));
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
  {
    std::lock_guard<std::mutex> guard{shared_->mu};
    ++shared_->held;
  }
  // No key: a local destination; the release is the engine letting it go.
  return std::make_shared<pinned_block>(
    data, size, reinterpret_cast<uintptr_t>(data),
    std::make_shared<const std::vector<uint8_t>>(), 0, [shared = shared_] {
      std::function<void()> run;
      {
        std::lock_guard<std::mutex> guard{shared->mu};
        if (--shared->held == 0)
          run = std::exchange(shared->on_quiet, {});
      }
      if (run)
        run();
    });
}

bool slot_landing::quiet(std::chrono::milliseconds bound) const {
  auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{shared_->mu};
      if (shared_->held == 0)
        return true;
    }
    if (std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

void slot_landing::when_quiet(std::function<void()> fn) const {
  {
    std::lock_guard<std::mutex> guard{shared_->mu};
    if (shared_->held > 0) {
      shared_->on_quiet = std::move(fn);
      return;
    }
  }
  fn();
}

caf::error slot_get_error(caf::error e) {
  if (e == caf::sec::request_timeout)
    return make_error(errc::get_abandoned, "the UCX GET of a peer's slot did not finish in time");
  return e;
}

} // namespace ferry
