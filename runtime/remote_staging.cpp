#include "runtime/remote_staging.hpp"

#include <caf/scoped_actor.hpp>

#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"
#include "runtime/node.hpp"

namespace ferry {

namespace {

remote_stage_request request_of(const remote_device_range& r, uint64_t offset,
                                stage_direction direction, int device,
                                staging::device_ptr local, uint64_t length) {
  remote_stage_request req;
  req.range = r;
  req.offset = offset;
  req.length = length;
  req.direction = direction;
  req.device = device;
  req.local = local;
  return req;
}

} // namespace

caf::error remote_span_error(const remote_device_range& r, uint64_t offset, uint64_t length) {
  if (length == 0 || offset > r.bytes || length > r.bytes - offset)
    return make_error(errc::invalid_argument, "bytes [" + std::to_string(offset) + ", +"
                                                + std::to_string(length)
                                                + ") are not inside the "
                                                + std::to_string(r.bytes) + "-byte range");
  return {};
}

caf::expected<remote_device_range> remote_staging::expose(int device, staging::device_ptr ptr,
                                                          uint64_t bytes,
                                                          staging::device_access access) {
  const auto& exposures = node_->device_exposures();
  if (!exposures)
    return make_error(errc::staging_unavailable, "this node has no staging layer");
  if (bytes == 0 || ptr == 0)
    return make_error(errc::invalid_argument, "an empty device range");
  remote_device_range r;
  r.source_worker = node_->worker_id();
  r.epoch = node_->incarnation();
  r.registration = exposures->expose(staging::device_exposure{device, ptr, bytes, access});
  r.bytes = bytes;
  return r;
}

caf::error remote_staging::withdraw(const remote_device_range& r) {
  const auto& exposures = node_->device_exposures();
  if (!exposures || r.source_worker != node_->worker_id() || r.epoch != node_->incarnation())
    return make_error(errc::invalid_argument, "the range is not this node's");
  return exposures->withdraw(r.registration);
}

remote_stage_outcome remote_staging::read(const remote_device_range& r, uint64_t offset,
                                          int device, staging::device_ptr dst,
                                          uint64_t length) {
  return run(request_of(r, offset, stage_direction::read, device, dst, length));
}

remote_stage_outcome remote_staging::write(const remote_device_range& r, uint64_t offset,
                                           int device, staging::device_ptr src,
                                           uint64_t length) {
  return run(request_of(r, offset, stage_direction::write, device, src, length));
}

remote_stage_outcome remote_staging::run(remote_stage_request req) {
  auto shards = node_->remote_stagers();
  if (!shards)
    return remote_stage_outcome::failed(
      make_error(errc::staging_unavailable, "this node has no staging layer"));
  if (auto err = remote_span_error(req.range, req.offset, req.length))
    return remote_stage_outcome::failed(std::move(err));
  const auto& cfg = node_->config();
  auto limit = cfg.transfer_timeout();
  req.deadline = std::chrono::steady_clock::now() + limit;
  caf::scoped_actor self{node_->system()};
  // The source's staging front, through this node's gateway.
  caf::error resolve_error;
  self
    ->request(node_->gateway(), cfg.request_timeout(), staging_source_atom::value,
              req.range.source_worker)
    .receive([&](caf::actor& a) { req.source = std::move(a); },
             [&](caf::error& e) { resolve_error = std::move(e); });
  if (resolve_error)
    return remote_stage_outcome::failed(std::move(resolve_error));
  auto ticket = req.ticket;
  bool write = req.direction == stage_direction::write;
  remote_stage_outcome out;
  // The session's own worst case: its deadline, its Unpin, its local drain.
  auto bound = limit + cfg.request_timeout() + std::chrono::milliseconds{30000};
  self->request(shards, bound, remote_stage_atom::value, std::move(req))
    .receive([&](remote_stage_outcome& o) { out = std::move(o); },
             [&](caf::error& e) {
               bool never_started = ticket->cancel(); // then it never will
               if (e == caf::sec::request_timeout)
                 e = make_error(errc::timeout, never_started
                                                 ? "the session waited past its deadline"
                                                 : "the session did not end by its deadline");
               out = remote_stage_outcome::failed(std::move(e));
               if (write && !never_started)
                 out.effect = remote_effect::unknown; // it may have sent a Delegate
             });
  return out;
}

} // namespace ferry
