#include "actors/rendezvous/transfer.hpp"

#include <algorithm>

#include <caf/sec.hpp>

#include "protocol/errors.hpp"
#include "rdma/rkey_preparse.hpp"

namespace ferry {

namespace {

constexpr std::chrono::milliseconds renew_floor{5};

} // namespace

transfer::transfer(params p) : p_(std::move(p)) {
  if (p_.pull_window == 0)
    p_.pull_window = 1;
}

transfer::commands transfer::start() {
  auto out = acquire(true);
  if (p_.deadline.count() > 0)
    out.insert(out.begin(), schedule_deadline{p_.deadline});
  return out;
}

/// A chunked lease is renewed by each pull, and a pull answers or fails the
/// get within request_timeout, so twice that never ends a live one.
std::chrono::milliseconds transfer::chunked_lease() const {
  return std::max(p_.lease, 2 * p_.request_timeout);
}

/// The offer from the local facts (the spec's three, and the pair reading
/// one-sided: ucx_peer says both); a fallback acquire offers nothing.
transfer::commands transfer::acquire(bool allow_offer) {
  commands out;
  rv_acquire_request req;
  req.handle = p_.handle;
  req.lease_ms = static_cast<uint64_t>(std::max<int64_t>(0, chunked_lease().count()));
  req.holds = true; // a finished get's hold keeps the lease (finish)
  // get_pinned's chunks land in a pool block allocated after the answer.
  req.eager_max = p_.dest == into::pinned_result ? 0 : p_.eager_max;
  asked_eager_ = req.eager_max;
  offered_ = false;
  if (allow_offer) {
    if (!p_.rdma_registry)
      out.emplace_back(count{transfer_path::chunked, path_reason::not_configured});
    else if (!p_.rdma_enabled)
      out.emplace_back(count{transfer_path::chunked, path_reason::kill_switch});
    else if (!p_.ucx_peer)
      out.emplace_back(count{transfer_path::chunked, path_reason::no_offer});
    else {
      req.rdma = rdma_offer{{"ucx"}};
      offered_ = true;
    }
  }
  phase_ = phase::acquiring;
  out.emplace_back(send_acquire{std::move(req)});
  return out;
}

caf::error transfer::check_size(uint64_t total_len) const {
  auto limit = p_.staged_payload_max;
  if (limit > 0 && total_len > limit)
    return make_error(errc::payload_too_large,
                      "payload of " + std::to_string(total_len)
                        + " bytes exceeds staged_payload_max of "
                        + std::to_string(limit) + " bytes");
  if ((p_.dest == into::raw || p_.dest == into::pinned_writer) && total_len > p_.room)
    return make_error(errc::payload_too_large,
                      "payload of " + std::to_string(total_len)
                        + " bytes does not fit a buffer of "
                        + std::to_string(p_.room) + " bytes");
  return caf::none;
}

transfer::commands transfer::on_acquired(const rv_acquire_response& answer,
                                         std::optional<uint64_t> eager_bytes) {
  if (phase_ == phase::done) {
    // Once, and only where the get ended while its acquire was out (a
    // second answer to a finished get must not end the caller's lease).
    if (!ended_acquiring_ || (!answer.rdma && !answer.ready))
      return {};
    ended_acquiring_ = false;
    auto lease = answer.rdma ? answer.rdma->lease_id : answer.ready->lease_id;
    if (p_.single_use)
      return {send_release{lease}};
    return {send_detach{lease}};
  }
  if (phase_ != phase::acquiring)
    return {};
  bool says_eager = answer.ready && answer.ready->eager;
  if (eager_bytes && *eager_bytes > 0 && !says_eager) {
    auto lease = answer.rdma ? answer.rdma->lease_id
                             : answer.ready ? answer.ready->lease_id : 0;
    auto out = failed(make_error(errc::protocol_violation,
                                 "owner sent " + std::to_string(*eager_bytes)
                                   + " bytes with an answer that is not eager"),
                      false);
    if (answer.rdma || answer.ready)
      out.insert(out.begin(), send_detach{lease});
    return out;
  }
  if (answer.rdma) {
    if (!offered_) { // e.g. a second descriptor after the fallback
      auto out = failed(make_error(errc::protocol_violation,
                                   "owner answered RDMA to an acquire without an offer"),
                        false);
      out.insert(out.begin(), send_detach{answer.rdma->lease_id}); // its lease goes back
      return out;
    }
    return on_rdma(*answer.rdma);
  }
  if (!answer.ready)
    return failed(make_error(errc::protocol_violation, "empty acquire answer"), false);
  return on_ready(*answer.ready, eager_bytes);
}

transfer::commands transfer::on_ready(const rv_ready& r,
                                      std::optional<uint64_t> eager_bytes) {
  ready_ = r;
  have_lease_ = true;
  lease_id_ = r.lease_id;
  total_len_ = r.total_len;
  if (r.total_len > 0
      && (r.chunk_size == 0 || r.chunk_count != chunks_for(r.total_len, r.chunk_size)))
    return failed(make_error(errc::protocol_violation,
                             "owner announced " + std::to_string(r.chunk_count)
                               + " chunks of " + std::to_string(r.chunk_size)
                               + " bytes for " + std::to_string(r.total_len)
                               + " bytes"));
  if (r.total_len == 0 && r.chunk_count != 0)
    return failed(make_error(errc::protocol_violation,
                             "owner announced chunks for an empty payload"));
  if (r.eager
      && (!eager_bytes || asked_eager_ == 0 || r.total_len > asked_eager_ || r.chunk_count > 1
          || (r.chunk_count == 0 && *eager_bytes != 0)))
    return failed(make_error(errc::protocol_violation,
                             "owner answered eagerly with " + std::to_string(r.total_len)
                               + " bytes in " + std::to_string(r.chunk_count)
                               + " chunks; asked for at most "
                               + std::to_string(asked_eager_) + " bytes"));
  eager_ = r.eager;
  if (auto err = check_size(r.total_len))
    return failed(std::move(err));
  commands out;
  if (p_.dest == into::pinned_result) {
    // Same result type on both paths: the chunks land in a pool block.
    if (!p_.rdma_registry)
      return failed(make_error(errc::pool_exhausted,
                               "get_pinned needs registered memory (UCX)"));
    phase_ = phase::allocating;
    chunk_block_ = true;
    out.emplace_back(alloc_destination{std::max<uint64_t>(1, r.total_len), false});
    return out;
  }
  if (p_.dest == into::buffer)
    out.emplace_back(reserve{r.total_len});
  phase_ = phase::pulling;
  if (r.chunk_count == 0) {
    auto rest = finish(false);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  if (r.eager) { // chunk 0 came with the answer: as if pulled and answered
    next_index_ = 1;
    in_flight_.push_back(0);
    auto rest = on_chunk(0, *eager_bytes);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  pump(out);
  return out;
}

transfer::commands transfer::on_rdma(const rv_rdma_grant& g) {
  have_lease_ = true;
  lease_id_ = g.lease_id;
  total_len_ = g.total_len;
  auto d = decode_descriptor(g.descriptor.data(), g.descriptor.size());
  if (!d || d.descriptor->backend != 1
      || check_packed_rkey(d.descriptor->rkey.data(), d.descriptor->rkey.size())
           != rkey_check::ok
      || d.descriptor->len != g.total_len)
    return fall_back(path_reason::decode_error);
  descriptor_ = *d.descriptor;
  if (auto err = check_size(descriptor_.len))
    return failed(std::move(err));
  renew_period_ = g.lease_timeout_ms == 0
                    ? std::chrono::milliseconds{0}
                    : std::max(renew_floor,
                               std::chrono::milliseconds{g.lease_timeout_ms / 2});
  if (p_.dest == into::pinned_writer) // zero copy: into the caller's block
    return begin_get();
  phase_ = phase::allocating;
  return {alloc_destination{descriptor_.len, true,
                            p_.dest == into::buffer && p_.get_into_result}};
}

transfer::commands transfer::on_destination(bool granted) {
  if (phase_ != phase::allocating)
    return {};
  if (chunk_block_) { // get_pinned's chunks land in this block
    if (!granted)
      return failed(make_error(errc::pool_exhausted,
                               "no registered block for get_pinned's chunks"));
    phase_ = phase::pulling;
    if (ready_.chunk_count == 0)
      return finish(false);
    commands out;
    pump(out);
    return out;
  }
  if (!granted)
    return fall_back(path_reason::pool_exhausted);
  return begin_get();
}

transfer::commands transfer::begin_get() {
  commands out;
  phase_ = phase::getting;
  if (renew_period_.count() > 0) {
    renewing_ = true;
    out.emplace_back(schedule_renewal{renew_period_});
  }
  out.emplace_back(start_get{descriptor_});
  return out;
}

transfer::commands transfer::on_get_done() {
  if (phase_ != phase::getting)
    return {};
  renewing_ = false;
  commands out{count{transfer_path::rdma, path_reason::ok}};
  auto rest = finish(true);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

transfer::commands transfer::on_get_failed(const caf::error& err) {
  if (phase_ != phase::getting)
    return {};
  renewing_ = false;
  bool abandoned = is(err, errc::get_abandoned) || err == caf::sec::request_timeout;
  if (abandoned && p_.dest == into::pinned_writer)
    return failed(err); // get_abandoned: see failed()
  return fall_back(path_reason::get_failed, abandoned);
}

/// The one fallback: detach the RDMA lease, acquire with no offer, pull.
transfer::commands transfer::fall_back(path_reason reason, bool get_unfinished) {
  commands out{count{transfer_path::chunked, reason}};
  renewing_ = false;
  if (have_lease_)
    out.emplace_back(send_detach{lease_id_, get_unfinished});
  have_lease_ = false;
  fell_back_ = true;
  descriptor_ = rdma_descriptor{};
  auto rest = acquire(false);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

void transfer::pump(commands& out) {
  while (in_flight_.size() < p_.pull_window && next_index_ < ready_.chunk_count) {
    in_flight_.push_back(next_index_);
    out.emplace_back(send_pull{ready_.transfer_id, next_index_++});
  }
}

transfer::commands transfer::on_chunk(uint64_t index, uint64_t size) {
  if (phase_ != phase::pulling)
    return {};
  auto pulled = std::find(in_flight_.begin(), in_flight_.end(), index);
  if (pulled == in_flight_.end())
    return failed(make_error(errc::protocol_violation,
                             "chunk " + std::to_string(index)
                               + (index < next_index_ ? " came twice" : " was not pulled")));
  auto offset = index * ready_.chunk_size;
  auto expected = std::min(ready_.chunk_size, ready_.total_len - offset);
  if (size != expected)
    return failed(make_error(errc::protocol_violation,
                             "chunk " + std::to_string(index) + " has "
                               + std::to_string(size) + " bytes, expected "
                               + std::to_string(expected)));
  commands out{write_chunk{index, offset, eager_}};
  in_flight_.erase(pulled);
  if (++received_ == ready_.chunk_count) {
    auto rest = finish(false);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  pump(out);
  return out;
}

transfer::commands transfer::on_renew_tick() {
  if (phase_ != phase::getting || !renewing_)
    return {};
  // A lost renewal is harmless: the next one is half a deadline away.
  return {send_renew{lease_id_}, schedule_renewal{renew_period_}};
}

std::string transfer::progress() const {
  std::string where;
  switch (phase_) {
    case phase::acquiring:
      where = "its acquire unanswered";
      break;
    case phase::allocating:
      where = "waiting for a registered destination of " + std::to_string(total_len_)
              + " bytes";
      break;
    case phase::getting:
      where = "its UCX GET of " + std::to_string(descriptor_.len) + " bytes running";
      break;
    case phase::pulling:
      where = "pulling: " + std::to_string(received_) + " of "
              + std::to_string(ready_.chunk_count) + " chunks arrived, "
              + std::to_string(in_flight_.size()) + " pulls out";
      break;
    case phase::done:
      where = "ended";
      break;
  }
  if (fell_back_)
    where += ", after falling back from RDMA to chunks";
  return where;
}

transfer::commands transfer::on_deadline() {
  if (phase_ == phase::done)
    return {};
  return failed(make_error(errc::timeout, "the get of " + to_string(p_.handle)
                                            + " did not finish within "
                                            + std::to_string(p_.deadline.count())
                                            + " ms (" + progress() + ")"));
}

transfer::commands transfer::on_owner_down(const std::string& why) {
  if (phase_ == phase::done)
    return {};
  // A dead owner has no lease to give back.
  return failed(make_error(errc::peer_down, "owner of " + to_string(p_.handle)
                                              + " went down: " + why),
                false);
}

transfer::commands transfer::on_caller_gone() {
  if (phase_ == phase::done)
    return {};
  return failed(make_error(errc::timeout, "the caller of the get of "
                                            + to_string(p_.handle) + " went away"));
}

transfer::commands transfer::on_error(caf::error err) {
  if (phase_ == phase::done)
    return {};
  return failed(std::move(err));
}

transfer::commands transfer::finish(bool by_rdma) {
  phase_ = phase::done;
  renewing_ = false;
  // The owner keeps the lease's deadline until it hears the bytes arrived:
  // an answer lost on the way leaves no lease held for good. So it is told,
  // right after the answer goes out (the answer waits for nothing; a
  // release or detach that overtakes the hold has ended the lease, and the
  // hold then finds none and changes nothing).
  if (p_.single_use)
    return {deliver{total_len_, lease_id_, by_rdma}, send_release{lease_id_}};
  if (!by_rdma && chunked_lease().count() == 0) // no deadline: nothing to hold
    return {deliver{total_len_, lease_id_, false}};
  // A quarter of the lease is well inside the deadline the last renewal
  // (RDMA: half a renewal period) or the last chunk served left.
  auto within = by_rdma ? renew_period_ / 2 : chunked_lease() / 4;
  bool later = p_.defer_holds && within >= min_hold_deferral;
  return {deliver{total_len_, lease_id_, by_rdma}, send_hold{lease_id_, within, later}};
}

transfer::commands transfer::failed(caf::error err, bool detach) {
  // Whatever ends the get while its GET runs into the caller's writer
  // (the GET given up, the deadline, the owner gone, ...), UCX may still
  // write that writer: the caller is told so, whatever the cause.
  if (phase_ == phase::getting && p_.dest == into::pinned_writer)
    err = make_error(errc::get_abandoned,
                     describe(err)
                       + "; the GET into the caller's registered writer had not "
                         "finished and UCX may still write it: drop that writer "
                         "(ferry keeps its memory until UCX lets go of it) and get "
                         "again into a fresh one, or with get or get_pinned");
  bool get_unfinished = phase_ == phase::getting;
  ended_acquiring_ = phase_ == phase::acquiring;
  phase_ = phase::done;
  renewing_ = false;
  commands out;
  if (detach && have_lease_) {
    if (p_.single_use)
      out.emplace_back(send_release{lease_id_, get_unfinished});
    else
      out.emplace_back(send_detach{lease_id_, get_unfinished});
  }
  have_lease_ = false;
  out.emplace_back(fail{std::move(err)});
  return out;
}

} // namespace ferry
