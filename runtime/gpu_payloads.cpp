#include "runtime/gpu_payloads.hpp"

#include <caf/scoped_actor.hpp>

#include "actors/staging/staging_workers.hpp"
#include "protocol/atoms.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/errors.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/node.hpp"

namespace ferry {

caf::expected<uint64_t> gpu_payloads::copy(int device, staging::copy_job job,
                                           std::shared_ptr<const void> keep) {
  auto workers = node_->staging_workers();
  if (!workers)
    return make_error(errc::staging_unavailable, "this node has no staging workers");
  auto limit = node_->config().transfer_timeout();
  job.deadline = std::chrono::steady_clock::now() + limit;
  gpu_copy_request req;
  req.device = device;
  req.job = job;
  req.keep = std::move(keep);
  auto ticket = req.ticket;
  caf::scoped_actor self{node_->system()};
  caf::expected<uint64_t> out{uint64_t{0}};
  self->request(workers, limit + node_->config().request_timeout(), gpu_copy_atom::value,
                std::move(req))
    .receive([&](uint64_t bytes) { out = bytes; },
             [&](caf::error& err) {
               bool never_started = ticket->cancel(); // then it never will
               if (err == caf::sec::request_timeout && never_started)
                 err = make_error(errc::timeout, "the GPU copy waited past its bound");
               out = std::move(err);
             });
  return out;
}

caf::expected<data_handle> gpu_payloads::register_device(int device,
                                                         staging::device_ptr src,
                                                         size_t bytes,
                                                         std::chrono::milliseconds ttl) {
  auto host = std::make_shared<byte_buffer>();
  try {
    reserve_for_bulk(*host, bytes);
    host->resize(bytes);
  } catch (const std::exception&) {
    return make_error(errc::payload_too_large,
                      "cannot allocate " + std::to_string(bytes) + " host bytes");
  }
  staging::copy_job job;
  job.direction = staging::copy_direction::to_host;
  job.device = src;
  job.host = host->data();
  job.bytes = bytes;
  auto copied = copy(device, job, host);
  if (!copied)
    return std::move(copied.error());
  // The copy is over, so nothing else holds the buffer's bytes.
  return blocking_client{*node_}.register_data_pinned(std::move(*host), ttl);
}

caf::expected<std::pair<uint64_t, uint64_t>>
gpu_payloads::get_into_device(const data_handle& h, int device, staging::device_ptr dst,
                              size_t capacity) {
  blocking_client client{*node_};
  auto meta = client.metadata(h);
  if (!meta)
    return std::move(meta.error());
  if (meta->total_len > capacity)
    return make_error(errc::payload_too_large,
                      "the payload has " + std::to_string(meta->total_len)
                        + " bytes, the device range " + std::to_string(capacity));
  auto got = client.get(h);
  if (!got)
    return std::move(got.error());
  auto lease = got->lease_id;
  if (got->bytes.size() > capacity) { // it changed under us: never write past dst
    client.release(h, lease);
    return make_error(errc::payload_too_large,
                      "the payload has " + std::to_string(got->bytes.size())
                        + " bytes, the device range " + std::to_string(capacity));
  }
  auto host = std::make_shared<byte_buffer>(std::move(got->bytes));
  staging::copy_job job;
  job.direction = staging::copy_direction::to_device;
  job.device = dst;
  job.host = host->data();
  job.bytes = host->size();
  auto copied = copy(device, job, host);
  if (!copied) {
    client.release(h, lease);
    return std::move(copied.error());
  }
  return std::make_pair(*copied, lease);
}

} // namespace ferry
