#include "runtime/blocking_client.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "protocol/errors.hpp"
#include "runtime/node.hpp"

namespace ferry {

blocking_client::blocking_client(node& n) : node_(&n) {
  // nop
}

// Each call: one request from a scoped actor, one answer or error. The
// error handler is the same everywhere; the value handler differs by type.

caf::expected<data_handle>
blocking_client::register_data(byte_buffer bytes, std::chrono::milliseconds ttl) {
  caf::scoped_actor self{node_->system()};
  caf::expected<data_handle> result = make_error(errc::timeout);
  self
    ->request(node_->owner(), caf::infinite, register_atom::value,
              std::move(bytes), static_cast<uint64_t>(ttl.count()))
    .receive([&](data_handle& h) { result = h; },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<data_handle>
blocking_client::register_data_pinned(byte_buffer bytes,
                                      std::chrono::milliseconds ttl) {
  caf::scoped_actor self{node_->system()};
  caf::expected<data_handle> result = make_error(errc::timeout);
  self
    ->request(node_->owner(), caf::infinite, register_pinned_atom::value,
              std::move(bytes), static_cast<uint64_t>(ttl.count()))
    .receive([&](data_handle& h) { result = h; },
             [&](caf::error& err) { result = std::move(err); });
  return result;
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
  caf::scoped_actor self{node_->system()};
  caf::expected<region_guard> result = make_error(errc::timeout);
  self->request(node_->arena_pool(), caf::infinite, region_register_atom::value, region)
    .receive(
      [&](uint64_t) {
        result = region_guard{
          region, node_->arena_pool(),
          std::chrono::milliseconds{node_->config().drop_dereg_timeout_ms}};
      },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<data_handle>
blocking_client::register_data_in_region(const region_guard& region,
                                         uint64_t offset, uint64_t len,
                                         std::chrono::milliseconds ttl) {
  caf::scoped_actor self{node_->system()};
  caf::expected<data_handle> result = make_error(errc::timeout);
  self
    ->request(node_->owner(), caf::infinite, region_stage_atom::value,
              region.region(), offset, len, static_cast<uint64_t>(ttl.count()))
    .receive([&](data_handle& h) { result = h; },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<get_result> blocking_client::get(const data_handle& h) {
  caf::scoped_actor self{node_->system()};
  caf::expected<get_result> result = make_error(errc::timeout);
  self->request(node_->consumer(), caf::infinite, get_atom::value, h)
    .receive(
      [&](byte_buffer& bytes, uint64_t lease) {
        result = get_result{std::move(bytes), lease};
      },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<std::pair<uint64_t, uint64_t>>
blocking_client::get_into(const data_handle& h, char* dest, size_t size) {
  caf::scoped_actor self{node_->system()};
  caf::expected<std::pair<uint64_t, uint64_t>> result = make_error(errc::timeout);
  self
    ->request(node_->consumer(), caf::infinite, get_into_atom::value, h,
              mutable_bytes{dest, size})
    .receive([&](uint64_t n, uint64_t lease) { result = std::make_pair(n, lease); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<pinned_result> blocking_client::get_pinned(const data_handle& h) {
  caf::scoped_actor self{node_->system()};
  caf::expected<pinned_result> result = make_error(errc::timeout);
  self->request(node_->consumer(), caf::infinite, get_pinned_atom::value, h)
    .receive(
      [&](pinned_ptr& block, uint64_t size, uint64_t lease) {
        result = pinned_result{std::move(block), size, lease};
      },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<pinned_ptr> blocking_client::alloc_pinned_writer(uint64_t bytes) {
  caf::scoped_actor self{node_->system()};
  caf::expected<pinned_ptr> result = make_error(errc::timeout);
  self->request(node_->consumer(), caf::infinite, pool_alloc_atom::value, bytes)
    .receive([&](pinned_ptr& block) { result = std::move(block); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<std::pair<uint64_t, uint64_t>>
blocking_client::get_into(const data_handle& h, const pinned_ptr& writer) {
  caf::scoped_actor self{node_->system()};
  caf::expected<std::pair<uint64_t, uint64_t>> result = make_error(errc::timeout);
  self->request(node_->consumer(), caf::infinite, get_into_atom::value, h, writer)
    .receive([&](uint64_t n, uint64_t lease) { result = std::make_pair(n, lease); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<rv_metadata_response>
blocking_client::metadata(const data_handle& h) {
  caf::scoped_actor self{node_->system()};
  caf::expected<rv_metadata_response> result = make_error(errc::timeout);
  self->request(node_->consumer(), caf::infinite, metadata_atom::value, h)
    .receive(
      [&](uint64_t len, uint64_t refs, bool pinned) {
        result = rv_metadata_response{len, refs, pinned};
      },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<uint64_t> blocking_client::ref(const data_handle& h) {
  caf::scoped_actor self{node_->system()};
  caf::expected<uint64_t> result = make_error(errc::timeout);
  self->request(node_->consumer(), caf::infinite, ref_atom::value, h)
    .receive([&](uint64_t refs) { result = refs; },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::error blocking_client::detach(const data_handle& h, uint64_t lease_id) {
  caf::scoped_actor self{node_->system()};
  caf::error result;
  self->request(node_->consumer(), caf::infinite, detach_atom::value, h, lease_id)
    .receive([&](caf::ok_atom) {},
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<rv_release_response>
blocking_client::release(const data_handle& h, uint64_t lease_id) {
  caf::scoped_actor self{node_->system()};
  caf::expected<rv_release_response> result = make_error(errc::timeout);
  self
    ->request(node_->consumer(), caf::infinite, release_atom::value, h, lease_id)
    .receive(
      [&](uint64_t refs, bool freed) { result = rv_release_response{refs, freed}; },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<data_handle> blocking_client::adopt(const gateway_actor& remote,
                                                  const data_handle& h,
                                                  bool pinned) {
  caf::scoped_actor self{node_->system()};
  caf::expected<data_handle> result = make_error(errc::timeout);
  auto options = nlohmann::json{{"pinned", pinned}}.dump();
  self
    ->request(remote, node_->config().transfer_timeout(), adopt_atom::value, h,
              options)
    .receive([&](data_handle& copy) { result = copy; },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

caf::expected<std::string> blocking_client::stat(const gateway_actor& gw) {
  caf::scoped_actor self{node_->system()};
  caf::expected<std::string> result = make_error(errc::timeout);
  self->request(gw, node_->config().request_timeout(), stat_atom::value)
    .receive([&](std::string& text) { result = std::move(text); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace ferry
