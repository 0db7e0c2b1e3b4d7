// owner_route: how this node's consumer side calls a peer's owner: CAF
// requests to the owner actor, or the control channel (rendezvous calls as
// UCX active messages through this node's UCX engine, issue 23) once the
// peer directory says both engines know the pair's tokens. One place for
// both, so the consumer and the consumer service call the same way
// whichever channel carries a call, and the same errors come back
// (request_timeout past the deadline, the owner's own errors by code).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/error.hpp>
#include <prometheus/counter.h>

#include "actors/rdma/rdma_metrics.hpp"
#include "actors/rdma/ucx_engine.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/control_frame.hpp"
#include "protocol/errors.hpp"
#include "rdma/control_channel_choice.hpp"

namespace ferry {

struct owner_route {
  owner_actor owner;      // the owner actor (a proxy of a peer's)
  ucx_engine_ref channel; // set: the calls go by the control channel
  uint64_t worker_id = 0; // the owner's node
  rdma_metrics* metrics = nullptr; // ferry_control_calls_total{channel}; null: not counted

  bool over_channel() const { return static_cast<bool>(channel); }

  /// The same owner by CAF requests: where the channel has no such peer
  /// (errc::no_channel: the engine sent nothing, e.g. it forgot the peer
  /// a moment before the directory did), a call goes that way instead.
  owner_route by_caf() const {
    auto r = *this;
    r.channel = {};
    return r;
  }

  /// One call counted under its channel. A channel call is counted once it
  /// is answered, since one the engine never sent (no_channel) goes, and is
  /// counted, by CAF instead.
  void count() const {
    if (metrics)
      metrics->control_calls[static_cast<int>(over_channel() ? control_channel::ucx_am
                                                             : control_channel::caf)]
        ->Increment();
  }
};

/// The control channel's op for each of the owner's CAF calls.
constexpr control_op op_of(rv_metadata_atom) { return control_op::metadata; }
constexpr control_op op_of(rv_ref_atom) { return control_op::ref; }
constexpr control_op op_of(rv_detach_atom) { return control_op::detach; }
constexpr control_op op_of(rv_release_atom) { return control_op::release; }
constexpr control_op op_of(rv_lease_renew_atom) { return control_op::lease_renew; }

namespace detail {

template <class Self>
auto request_channel(Self* self, const owner_route& r, std::chrono::milliseconds timeout,
                     control_op op, std::string body) {
  auto req = self->request(r.channel.actor(), timeout + channel_call_margin,
                           control_call_atom::value, r.worker_id, static_cast<uint8_t>(op),
                           std::move(body), static_cast<uint64_t>(timeout.count()));
  r.channel.wake();
  return req;
}

} // namespace detail

/// A call answered by a JSON body: on_body(std::string&) or on_error(caf::error&).
template <class Self, class Atom, class OnBody, class OnError>
void call_owner_json(Self* self, const owner_route& r, std::chrono::milliseconds timeout,
                     Atom atom, std::string body, OnBody on_body, OnError on_error) {
  if (r.over_channel()) {
    detail::request_channel(self, r, timeout, op_of(atom), body)
      .then(
        [=](const chunk_bytes& answer, const chunk_bytes&) mutable {
          r.count();
          std::string json{answer.data(), answer.size()};
          on_body(json);
        },
        [=](caf::error& err) mutable {
          if (is(err, errc::no_channel))
            return call_owner_json(self, r.by_caf(), timeout, atom, body, on_body, on_error);
          r.count();
          on_error(err);
        });
    return;
  }
  r.count();
  self->request(r.owner, timeout, atom, std::move(body))
    .then([=](std::string& json) mutable { on_body(json); },
          [=](caf::error& err) mutable { on_error(err); });
}

/// An acquire: on_answer(std::string& json, const chunk_bytes* eager) with
/// the payload's bytes when the call was eager (or bytes came anyway, which
/// the transfer rules refuse), else null.
template <class Self, class OnAnswer, class OnError>
void call_owner_acquire(Self* self, const owner_route& r, std::chrono::milliseconds timeout,
                        std::string body, bool eager, OnAnswer on_answer, OnError on_error) {
  if (r.over_channel()) {
    detail::request_channel(self, r, timeout, control_op::acquire, body)
      .then(
        [=](const chunk_bytes& answer, const chunk_bytes& payload) mutable {
          r.count();
          std::string json{answer.data(), answer.size()};
          on_answer(json, eager || payload.size() > 0 ? &payload : nullptr);
        },
        [=](caf::error& err) mutable {
          if (is(err, errc::no_channel))
            return call_owner_acquire(self, r.by_caf(), timeout, body, eager, on_answer,
                                      on_error);
          r.count();
          on_error(err);
        });
    return;
  }
  r.count();
  if (!eager) {
    self->request(r.owner, timeout, rv_acquire_atom::value, std::move(body))
      .then([=](std::string& json) mutable { on_answer(json, nullptr); },
            [=](caf::error& err) mutable { on_error(err); });
    return;
  }
  self->request(r.owner, timeout, rv_acquire_eager_atom::value, std::move(body))
    .then([=](std::string& json, chunk_bytes& bytes) mutable { on_answer(json, &bytes); },
          [=](caf::error& err) mutable { on_error(err); });
}

/// A pull: on_chunk(const chunk_bytes&) or on_error(caf::error&).
template <class Self, class OnChunk, class OnError>
void call_owner_pull(Self* self, const owner_route& r, std::chrono::milliseconds timeout,
                     std::string body, OnChunk on_chunk, OnError on_error) {
  if (r.over_channel()) {
    detail::request_channel(self, r, timeout, control_op::pull, body)
      .then(
        [=](const chunk_bytes& chunk, const chunk_bytes&) mutable {
          r.count();
          on_chunk(chunk);
        },
        [=](caf::error& err) mutable {
          if (is(err, errc::no_channel))
            return call_owner_pull(self, r.by_caf(), timeout, body, on_chunk, on_error);
          r.count();
          on_error(err);
        });
    return;
  }
  r.count();
  self->request(r.owner, timeout, rv_pull_atom::value, std::move(body))
    .then([=](const chunk_bytes& chunk) mutable { on_chunk(chunk); },
          [=](caf::error& err) mutable { on_error(err); });
}

/// A one-way call (detach, renew, hold, release: a lost one is harmless).
template <class Atom>
void tell_owner(const owner_route& r, Atom atom, std::string body) {
  r.count();
  if (r.over_channel()) {
    // The engine sends it by CAF itself (by_caf) where the channel sends
    // nothing (the peer fell back, or is no longer on it).
    auto by_caf = caf::make_message(atom, body);
    caf::anon_send(r.channel.actor(), control_tell_atom::value, r.worker_id,
                   static_cast<uint8_t>(op_of(atom)), std::move(body),
                   caf::actor_cast<caf::actor>(r.owner), std::move(by_caf));
    r.channel.wake();
    return;
  }
  caf::anon_send(r.owner, atom, std::move(body));
}

} // namespace ferry
