#include "runtime/transfer_batch.hpp"

#include <utility>

#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/gpu_payloads.hpp"
#include "runtime/node.hpp"
#include "runtime/remote_staging.hpp"
#include "staging/local_device_range.hpp"
#include "staging/local_stager.hpp"

namespace ferry {

namespace {

bool is_device_item(batch_item_kind k) {
  return k != batch_item_kind::get_into_host;
}

bool is_get(batch_item_kind k) {
  return k == batch_item_kind::get_into_device || k == batch_item_kind::get_into_host;
}

/// A get's payload, asked of its owner: known, and no larger than the
/// item's capacity.
caf::error check_payload_fits(blocking_client& client, const batch_item& item) {
  auto meta = client.metadata(item.handle);
  if (!meta)
    return std::move(meta.error());
  if (meta->total_len > item.length)
    return make_error(errc::payload_too_large, "the payload has " + std::to_string(meta->total_len)
                                                 + " bytes, the item's capacity "
                                                 + std::to_string(item.length));
  return {};
}

/// Runs one prepared item to its end.
batch_item_outcome run_item(node& n, const batch_item& item) {
  batch_item_outcome out;
  auto took = [&](caf::expected<std::pair<uint64_t, uint64_t>> got) {
    if (!got) {
      out.state = batch_item_state::failed;
      out.error = std::move(got.error());
      return;
    }
    out.state = batch_item_state::done;
    out.bytes = got->first;
    out.lease_id = got->second;
  };
  switch (item.kind) {
    case batch_item_kind::remote_read:
    case batch_item_kind::remote_write: {
      remote_staging rs{n};
      auto o = item.kind == batch_item_kind::remote_read
                 ? rs.read(item.range, item.offset, item.device, item.local_device, item.length)
                 : rs.write(item.range, item.offset, item.device, item.local_device,
                            item.length);
      out.state = o.error ? batch_item_state::failed : batch_item_state::done;
      out.error = std::move(o.error);
      out.bytes = o.completed;
      out.effect = o.effect;
      break;
    }
    case batch_item_kind::get_into_device:
      took(gpu_payloads{n}.get_into_device(item.handle, item.device, item.local_device,
                                           item.length));
      break;
    case batch_item_kind::get_into_host:
      took(blocking_client{n}.get_into(item.handle, item.local_host, item.length));
      break;
  }
  return out;
}

} // namespace

caf::error check_batch_item(const batch_item& item, staging::cuda_api* api,
                            const std::string& cuda_missing) {
  if (item.length == 0)
    return make_error(errc::invalid_argument, "zero bytes");
  if (!is_get(item.kind)) {
    if (auto err = remote_span_error(item.range, item.offset, item.length))
      return err;
  } else if (item.handle == data_handle{}) {
    return make_error(errc::invalid_argument, "no handle");
  }
  if (!is_device_item(item.kind)) {
    if (item.local_host == nullptr)
      return make_error(errc::invalid_argument, "no host buffer");
    return {};
  }
  if (api == nullptr)
    return make_error(errc::staging_unavailable, "this node has no staging layer");
  if (!cuda_missing.empty())
    return make_error(errc::staging_unavailable, "this node has no CUDA: " + cuda_missing);
  return staging::local_device_range_error(*api, item.local_device, item.length);
}

transfer_batch& transfer_batch::read(const remote_device_range& r, uint64_t offset, int device,
                                     staging::device_ptr dst, uint64_t length) {
  batch_item item;
  item.kind = batch_item_kind::remote_read;
  item.range = r;
  item.offset = offset;
  item.device = device;
  item.local_device = dst;
  item.length = length;
  items_.push_back(item);
  return *this;
}

transfer_batch& transfer_batch::write(const remote_device_range& r, uint64_t offset, int device,
                                      staging::device_ptr src, uint64_t length) {
  read(r, offset, device, src, length);
  items_.back().kind = batch_item_kind::remote_write;
  return *this;
}

transfer_batch& transfer_batch::get_into_device(const data_handle& h, int device,
                                                staging::device_ptr dst, uint64_t capacity) {
  batch_item item;
  item.kind = batch_item_kind::get_into_device;
  item.handle = h;
  item.device = device;
  item.local_device = dst;
  item.length = capacity;
  items_.push_back(item);
  return *this;
}

transfer_batch& transfer_batch::get_into(const data_handle& h, char* dst, uint64_t capacity) {
  batch_item item;
  item.kind = batch_item_kind::get_into_host;
  item.handle = h;
  item.local_host = dst;
  item.length = capacity;
  items_.push_back(item);
  return *this;
}

batch_outcome transfer_batch::run() {
  batch_outcome out;
  out.items.resize(items_.size());
  // The whole submission first: nothing runs while one item is bad.
  const auto& stager = node_->stager();
  staging::cuda_api* api = stager ? &stager->api() : nullptr;
  auto cuda_missing = stager ? stager->unavailable_reason() : std::string{};
  blocking_client client{*node_};
  for (size_t i = 0; i < items_.size(); ++i) {
    auto err = check_batch_item(items_[i], api, cuda_missing);
    if (!err && is_get(items_[i].kind))
      err = check_payload_fits(client, items_[i]);
    if (err) {
      out.failed_at = i;
      out.items[i].state = batch_item_state::failed;
      out.items[i].error = err;
      out.error = err;
      return out;
    }
  }
  // Then in order: each item once the one before it ended well.
  for (size_t i = 0; i < items_.size(); ++i) {
    out.items[i] = run_item(*node_, items_[i]);
    if (out.items[i].state == batch_item_state::failed) {
      out.failed_at = i;
      out.error = out.items[i].error;
      return out;
    }
  }
  return out;
}

caf::error transfer_batch::detach_leases(batch_outcome& out) {
  blocking_client client{*node_};
  caf::error first;
  for (size_t i = 0; i < out.items.size() && i < items_.size(); ++i) {
    auto& item = out.items[i];
    if (item.lease_id == 0)
      continue;
    auto err = client.detach(items_[i].handle, std::exchange(item.lease_id, 0));
    if (err && !first)
      first = std::move(err);
  }
  return first;
}

} // namespace ferry
