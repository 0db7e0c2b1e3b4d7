#include "runtime/blocking_client.hpp"

#include <utility>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "protocol/errors.hpp"
#include "runtime/node.hpp"

namespace ferry {

blocking_client::blocking_client(node& n) : node_(&n) {
  // nop
}

namespace {

/// A handler with exactly the parameters of `f` that stores f's result.
template <class Result, class F, class... Args>
auto store_into(caf::expected<Result>& out, F& f, caf::detail::type_list<Args...>) {
  return [&out, &f](Args... xs) { out = f(std::forward<Args>(xs)...); };
}

} // namespace

template <class Result, class Dest, class OnValue, class... Ts>
caf::expected<Result> blocking_client::ask(std::chrono::milliseconds timeout,
                                           const Dest& dest, OnValue on_value,
                                           Ts&&... xs) {
  caf::scoped_actor self{node_->system()};
  caf::expected<Result> result = make_error(errc::timeout);
  using args = typename caf::detail::get_callable_trait<OnValue>::arg_types;
  self->request(dest, timeout, std::forward<Ts>(xs)...)
    .receive(store_into(result, on_value, args{}),
             [&](caf::error& err) {
               if (err == caf::sec::request_timeout)
                 err = make_error(errc::timeout,
                                  "no answer within "
                                    + std::to_string(timeout.count()) + " ms");
               result = std::move(err);
             });
  return result;
}

std::chrono::milliseconds blocking_client::control_bound() const {
  return node_->config().request_timeout();
}

std::chrono::milliseconds blocking_client::transfer_bound() const {
  return node_->config().transfer_timeout() + node_->config().request_timeout();
}

caf::expected<data_handle>
blocking_client::register_data(byte_buffer bytes, std::chrono::milliseconds ttl) {
  return ask<data_handle>(
    transfer_bound(), node_->owner(), [](data_handle& h) { return h; },
    register_atom::value, std::move(bytes), static_cast<uint64_t>(ttl.count()));
}

caf::expected<data_handle>
blocking_client::register_data_pinned(byte_buffer bytes,
                                      std::chrono::milliseconds ttl) {
  return ask<data_handle>(
    transfer_bound(), node_->owner(), [](data_handle& h) { return h; },
    register_pinned_atom::value, std::move(bytes),
    static_cast<uint64_t>(ttl.count()));
}

caf::expected<region_guard>
blocking_client::register_external_memory(void* ptr, size_t len) {
  auto at = reinterpret_cast<uintptr_t>(ptr);
  if (ptr == nullptr || len == 0 || at + len < at)
    return make_error(errc::invalid_argument,
                      "register_external_memory needs a non-null, non-empty "
                      "range that does not wrap");
  return register_region(
    std::make_shared<external_region>(static_cast<char*>(ptr), len));
}

caf::expected<region_guard> blocking_client::register_owned(byte_buffer& buffer) {
  if (buffer.empty())
    return make_error(errc::invalid_argument, "register_owned of an empty buffer");
  auto* data = buffer.data();
  auto size = buffer.size();
  auto region = std::make_shared<external_region>(data, size, std::move(buffer));
  auto guard = register_region(region);
  if (!guard) // a refusal must not consume the allocation
    buffer = region->take_unregistered_owned();
  return guard;
}

caf::expected<region_guard>
blocking_client::register_region(external_region_ptr region) {
  if (!node_->has_ucx())
    return make_error(errc::invalid_argument,
                      "this node has no UCX transport: nothing to register with");
  auto pool = node_->arena_pool();
  auto drop_timeout = std::chrono::milliseconds{node_->config().drop_dereg_timeout_ms};
  return ask<region_guard>(
    transfer_bound(), pool,
    [&](uint64_t) { return region_guard{region, pool, drop_timeout}; },
    region_register_atom::value, region);
}

caf::expected<data_handle>
blocking_client::register_data_in_region(const region_guard& region,
                                         uint64_t offset, uint64_t len,
                                         std::chrono::milliseconds ttl) {
  return ask<data_handle>(
    control_bound(), node_->owner(), [](data_handle& h) { return h; },
    region_stage_atom::value, region.region(), offset, len,
    static_cast<uint64_t>(ttl.count()));
}

caf::expected<get_result> blocking_client::get(const data_handle& h) {
  return ask<get_result>(
    transfer_bound(), node_->consumer(),
    [](byte_buffer& bytes, uint64_t lease) {
      return get_result{std::move(bytes), lease};
    },
    get_atom::value, h);
}

void blocking_client::give_back(byte_buffer&& bytes) {
  node_->give_back(std::move(bytes));
}

caf::expected<std::pair<uint64_t, uint64_t>>
blocking_client::get_into(const data_handle& h, char* dest, size_t size) {
  return ask<std::pair<uint64_t, uint64_t>>(
    transfer_bound(), node_->consumer(),
    [](uint64_t n, uint64_t lease) { return std::make_pair(n, lease); },
    get_into_atom::value, h, mutable_bytes{dest, size});
}

caf::expected<pinned_result> blocking_client::get_pinned(const data_handle& h) {
  return ask<pinned_result>(
    transfer_bound(), node_->consumer(),
    [](pinned_ptr& block, uint64_t size, uint64_t lease) {
      return pinned_result{std::move(block), size, lease};
    },
    get_pinned_atom::value, h);
}

caf::expected<pinned_ptr> blocking_client::alloc_pinned_writer(uint64_t bytes) {
  return ask<pinned_ptr>(
    control_bound(), node_->consumer(),
    [](pinned_ptr& block) { return std::move(block); }, pool_alloc_atom::value,
    bytes);
}

caf::expected<std::pair<uint64_t, uint64_t>>
blocking_client::get_into(const data_handle& h, const pinned_ptr& writer) {
  return ask<std::pair<uint64_t, uint64_t>>(
    transfer_bound(), node_->consumer(),
    [](uint64_t n, uint64_t lease) { return std::make_pair(n, lease); },
    get_into_atom::value, h, writer);
}

caf::expected<rv_metadata_response>
blocking_client::metadata(const data_handle& h) {
  return ask<rv_metadata_response>(
    control_bound(), node_->consumer(),
    [](uint64_t len, uint64_t refs, bool pinned) {
      return rv_metadata_response{len, refs, pinned};
    },
    metadata_atom::value, h);
}

caf::expected<uint64_t> blocking_client::ref(const data_handle& h) {
  return ask<uint64_t>(
    control_bound(), node_->consumer(), [](uint64_t refs) { return refs; },
    ref_atom::value, h);
}

caf::error blocking_client::detach(const data_handle& h, uint64_t lease_id) {
  auto r = ask<caf::ok_atom>(
    control_bound(), node_->consumer(), [](caf::ok_atom ok) { return ok; },
    detach_atom::value, h, lease_id);
  return r ? caf::error{} : std::move(r.error());
}

caf::expected<rv_release_response>
blocking_client::release(const data_handle& h, uint64_t lease_id) {
  return ask<rv_release_response>(
    control_bound(), node_->consumer(),
    [](uint64_t refs, bool freed) { return rv_release_response{refs, freed}; },
    release_atom::value, h, lease_id);
}

caf::expected<data_handle> blocking_client::adopt(const gateway_actor& remote,
                                                  const data_handle& h,
                                                  bool pinned) {
  auto options = nlohmann::json{{"pinned", pinned}}.dump();
  // The remote node runs a whole get and a staging copy for us.
  return ask<data_handle>(
    transfer_bound() + transfer_bound(), remote,
    [](data_handle& copy) { return copy; }, adopt_atom::value, h, options);
}

caf::expected<caf::actor> blocking_client::spawn(const gateway_actor& gw,
                                                 const std::string& type,
                                                 caf::message args) {
  return ask<caf::actor>(
    control_bound(), gw, [](caf::actor& a) { return std::move(a); }, spawn_atom::value,
    type, std::move(args));
}

caf::expected<std::string> blocking_client::stat(const gateway_actor& gw) {
  return ask<std::string>(
    control_bound(), gw, [](std::string& text) { return std::move(text); },
    stat_atom::value);
}

} // namespace ferry
