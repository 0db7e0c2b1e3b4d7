#include "runtime/region_guard.hpp"

#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "protocol/errors.hpp"

namespace ferry {

namespace {

// How long unregister waits for the pool's confirmation beyond the drain
// budget (the unmap itself is quick; the pool may be busy mapping).
constexpr std::chrono::milliseconds confirm_grace{10000};

} // namespace

region_guard::region_guard(external_region_ptr region, arena_pool_actor pool,
                           std::chrono::milliseconds drop_timeout)
  : region_(std::move(region)),
    pool_(caf::actor_cast<caf::weak_actor_ptr>(pool)),
    drop_timeout_(drop_timeout) {
  // nop
}

region_guard::region_guard(region_guard&& other) noexcept = default;

region_guard& region_guard::operator=(region_guard&& other) noexcept {
  if (this != &other) {
    drop();
    region_ = std::move(other.region_);
    pool_ = std::move(other.pool_);
    drop_timeout_ = other.drop_timeout_;
  }
  return *this;
}

region_guard::~region_guard() {
  drop();
}

void region_guard::drop() {
  if (!region_ || region_->released())
    return;
  spdlog::warn("a registered region of {} bytes was dropped without "
               "unregister; unregistering it in the background (up to {} ms)",
               region_->size(), drop_timeout_.count());
  start_unregister(drop_timeout_);
}

void region_guard::start_unregister(std::chrono::milliseconds timeout) {
  // A released region is already unmapped (and after a node's stop its
  // pool is gone): nothing to send.
  if (region_->released())
    return;
  if (auto pool = caf::actor_cast<arena_pool_actor>(pool_))
    caf::anon_send(pool, region_unregister_atom::value, region_,
                   static_cast<uint64_t>(timeout.count()));
}

caf::expected<deregistered>
region_guard::unregister(std::chrono::milliseconds timeout) {
  if (!region_)
    return make_error(errc::invalid_argument, "this guard was already used");
  start_unregister(timeout);
  auto how = region_->wait_released(timeout + confirm_grace);
  if (!how)
    return make_error(errc::timeout, "the unmap of the region was not "
                                     "confirmed; it is still registered, do "
                                     "not free the memory");
  return *how;
}

caf::expected<byte_buffer>
region_guard::unregister_owned(std::chrono::milliseconds timeout) {
  auto how = unregister(timeout);
  if (!how)
    return how.error();
  auto region = std::move(region_);
  return region->take_owned();
}

} // namespace ferry
