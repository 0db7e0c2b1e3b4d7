#include "actors/staging/remote_stager.hpp"

#include <algorithm>
#include <deque>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/staging/requester_session.hpp"
#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

remote_stage_outcome cancelled_before_pin() {
  return remote_stage_outcome::failed(
    make_error(errc::cancelled, "the remote staging request was cancelled before its Pin"));
}

/// One shard: a detached actor that runs each session it is handed to its
/// end (its thread blocks on the session's calls and copies).
caf::behavior shard(caf::event_based_actor* self, std::shared_ptr<remote_stager_params> p) {
  return {
    [self, p](remote_stage_atom, const remote_stage_request& req) -> remote_stage_outcome {
      if (p->step_hook)
        p->step_hook("taken"); // (tests: a throw here, outside the session, loses the shard)
      auto& stats = *p->stats;
      if (!req.ticket->start()) {
        stats.cancelled.fetch_add(1);
        return cancelled_before_pin();
      }
      if (std::chrono::steady_clock::now() >= req.deadline) {
        stats.failed.fetch_add(1);
        return remote_stage_outcome::failed(make_error(
          errc::timeout, "the remote staging request waited in the queue past its deadline"));
      }
      stats.active.fetch_add(1);
      auto out = run_requester_session(self->system(), *p, req);
      stats.active.fetch_sub(1);
      if (out.error) {
        stats.failed.fetch_add(1);
        if (out.effect == remote_effect::unknown)
          stats.effect_unknown.fetch_add(1);
      } else {
        stats.completed.fetch_add(1);
        (req.direction == stage_direction::read ? stats.bytes_read : stats.bytes_written)
          .fetch_add(out.completed);
      }
      return out;
    },
  };
}

struct waiting {
  remote_stage_request req;
  caf::response_promise rp;
};

/// The front's state: one line that every shard takes its next session
/// from, so a session waits only while every shard is busy.
struct front_state {
  std::shared_ptr<remote_stager_params> p;
  // Every shard alive (the front's end stops them), and those free now.
  std::shared_ptr<std::vector<caf::actor>> shards = std::make_shared<std::vector<caf::actor>>();
  std::vector<caf::actor> idle;
  std::deque<waiting> line;     // sessions waiting for a shard
  size_t running = 0;
  bool stopping = false;
  std::vector<caf::response_promise> stopped; // the node's stop, once none runs
  static inline const char* name = "ferry.remote_stagers";
};
using front_actor = caf::stateful_actor<front_state>;

void hand_to(front_actor* self, caf::actor shard, waiting w);

caf::actor spawn_shard(front_actor* self) {
  auto s = self->system().spawn<caf::detached>(shard, self->state.p);
  self->state.shards->push_back(s);
  return s;
}

/// A shard answered an error, which it never does itself: it is gone (an
/// exception took it). A fresh one takes its place.
caf::actor replace_shard(front_actor* self, const caf::actor& lost, const caf::error& why) {
  auto& all = *self->state.shards;
  all.erase(std::remove(all.begin(), all.end(), lost), all.end());
  spdlog::error("remote staging: a requester shard was lost ({}); a fresh one replaces it",
                describe(why));
  return spawn_shard(self);
}

/// A shard is free: it takes the next session still wanted, or waits.
void shard_free(front_actor* self, caf::actor shard) {
  auto& st = self->state;
  --st.running;
  while (!st.line.empty()) {
    auto w = std::move(st.line.front());
    st.line.pop_front();
    if (w.req.ticket->was_cancelled()) { // destroyed before its Pin
      st.p->stats->queued.fetch_sub(1);
      st.p->stats->cancelled.fetch_add(1);
      w.rp.deliver(cancelled_before_pin());
      continue;
    }
    hand_to(self, std::move(shard), std::move(w));
    return;
  }
  st.idle.push_back(std::move(shard));
  if (st.running == 0)
    for (auto& rp : std::exchange(st.stopped, {}))
      rp.deliver(true);
}

void hand_to(front_actor* self, caf::actor shard, waiting w) {
  auto& st = self->state;
  ++st.running;
  st.p->stats->queued.fetch_sub(1);
  // No timeout here: the session bounds itself (its deadline, its Unpin,
  // its drain) and the caller bounds its wait.
  self->request(shard, caf::infinite, remote_stage_atom::value, std::move(w.req))
    .then(
      [self, shard, rp = w.rp](remote_stage_outcome& out) mutable {
        rp.deliver(std::move(out));
        shard_free(self, shard);
      },
      [self, shard, rp = w.rp](caf::error& err) mutable {
        self->state.p->stats->failed.fetch_add(1);
        auto fresh = replace_shard(self, shard, err);
        rp.deliver(remote_stage_outcome::failed(std::move(err)));
        shard_free(self, std::move(fresh));
      });
}

caf::behavior front(front_actor* self, std::shared_ptr<remote_stager_params> p,
                    size_t shards) {
  self->state.p = p;
  for (size_t i = 0; i < shards; ++i)
    self->state.idle.push_back(spawn_shard(self));
  self->attach_functor([all = self->state.shards](const caf::error&) {
    for (auto& s : *all)
      caf::anon_send_exit(s, caf::exit_reason::user_shutdown); // (a normal one is ignored)
  });
  return {
    [self](remote_stage_atom, remote_stage_request& req) -> caf::result<remote_stage_outcome> {
      auto& st = self->state;
      if (st.stopping)
        return remote_stage_outcome::failed(
          make_error(errc::draining, "the node is stopping"));
      auto max = st.p->max_queued == 0 ? size_t{1} : st.p->max_queued;
      if (st.running + st.line.size() >= max) {
        st.p->stats->refused.fetch_add(1);
        return remote_stage_outcome::failed(make_error(
          errc::resource_exhausted,
          std::to_string(max) + " remote staging sessions are already waiting or running"));
      }
      st.p->stats->queued.fetch_add(1);
      auto rp = self->make_response_promise<remote_stage_outcome>();
      waiting w{std::move(req), rp};
      if (st.idle.empty()) {
        st.line.push_back(std::move(w));
      } else {
        auto s = std::move(st.idle.back());
        st.idle.pop_back();
        hand_to(self, std::move(s), std::move(w));
      }
      return rp;
    },
    // The node's stop: new sessions are refused, waiting ones answer
    // cancelled (never pinned), and the answer comes once none runs.
    [self](stop_work_atom) -> caf::result<bool> {
      auto& st = self->state;
      st.stopping = true;
      st.p->stopping->store(true); // running sessions end at their next step
      for (auto& w : std::exchange(st.line, {})) {
        w.req.ticket->cancel();
        st.p->stats->queued.fetch_sub(1);
        st.p->stats->cancelled.fetch_add(1);
        w.rp.deliver(cancelled_before_pin());
      }
      if (st.running == 0)
        return true;
      auto rp = self->make_response_promise();
      st.stopped.push_back(rp);
      return rp;
    },
  };
}

} // namespace

caf::actor spawn_remote_stagers(caf::actor_system& sys, remote_stager_params p) {
  auto n = std::min(std::max<size_t>(p.shards, 1), max_remote_stager_shards);
  p.stats->shards.store(n);
  return sys.spawn(front, std::make_shared<remote_stager_params>(std::move(p)), n);
}

} // namespace ferry
