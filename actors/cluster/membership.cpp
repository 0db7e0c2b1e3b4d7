#include "actors/cluster/membership.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/cluster/gateway_interface.hpp"
#include "actors/cluster/member_table.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/errors.hpp"
#include "rdma/control_channel_choice.hpp"

namespace ferry {

namespace {

// A member's list is bounded like the table it feeds.
constexpr size_t max_listed_members = 4096;

// How long a probe waits for a TCP answer. A live host answers a connect at
// once, even when the process behind the port is stopped (its kernel
// does); one that drops packets costs this much of the prober, which runs
// one probe at a time, at each of a departed member's redials.
constexpr std::chrono::milliseconds max_probe_wait{2000};

struct membership_state {
  membership_params params;
  member_table table{{}};
  gateway_actor gateway; // local; set by the join message
  bool started = false;
  bool tick_armed = false;
  member_table::clock::time_point tick_at{};
  static inline const char* name = "ferry.membership";
};

using membership_ptr = caf::stateful_actor<membership_state>*;

void dial_due(membership_ptr self);
void connect_and_hello(membership_ptr self, const std::string& ep, const std::string& host,
                       uint16_t port);

void update_ready(membership_ptr self) {
  auto& st = self->state;
  bool ready = st.table.ready();
  if (ready && !st.params.ready->exchange(true))
    spdlog::info("joined the cluster ({} members)", st.table.members());
}

/// Arms one timer for the next due endpoint (none when nothing waits, or
/// an earlier timer already covers it).
void arm(membership_ptr self) {
  auto& st = self->state;
  auto next = st.table.next_due();
  if (!next || !st.started)
    return;
  if (st.tick_armed && st.tick_at <= *next)
    return;
  auto now = member_table::clock::now();
  auto delay = *next > now ? std::chrono::duration_cast<std::chrono::milliseconds>(*next - now)
                           : std::chrono::milliseconds{0};
  st.tick_armed = true;
  st.tick_at = *next;
  self->delayed_send(self, delay, tick_atom::value);
}

void failed(membership_ptr self, const std::string& ep, const std::string& why) {
  auto& st = self->state;
  auto unreached = st.table.unreached();
  bool target = std::find(unreached.begin(), unreached.end(), ep) != unreached.end();
  st.table.dial_failed(ep, member_table::clock::now());
  if (target)
    spdlog::warn("join {}: {} (retrying)", ep, why);
  else
    spdlog::debug("member {}: {}", ep, why);
  arm(self);
}

void learn_all(membership_ptr self, const std::vector<std::string>& eps) {
  auto now = member_table::clock::now();
  size_t n = 0;
  for (const auto& ep : eps) {
    if (++n > max_listed_members)
      break;
    if (parse_endpoint(ep))
      self->state.table.learn(ep, now);
  }
  dial_due(self);
}

/// Probe, connect, hello, register the answer, then pull its member list.
void dial(membership_ptr self, const std::string& ep) {
  auto where = parse_endpoint(ep);
  if (!where) {
    failed(self, ep, describe(where.error()));
    return;
  }
  // Named copies, not a structured binding: lambdas capture them (C++17).
  std::string host = where->first;
  uint16_t port = where->second;
  auto timeout = self->state.params.request_timeout;
  // CAF's connect blocks its middleman on an address that drops packets:
  // only one that answered a bounded probe is dialled.
  auto probe_wait = std::min(timeout, max_probe_wait);
  self->request(self->state.params.prober, timeout + std::chrono::seconds{5},
                probe_atom::value, host, port, static_cast<uint64_t>(probe_wait.count()))
    .then([=](caf::ok_atom) { connect_and_hello(self, ep, host, port); },
          [=](caf::error& err) { failed(self, ep, describe(err)); });
}

void connect_and_hello(membership_ptr self, const std::string& ep, const std::string& host,
                       uint16_t port) {
  auto timeout = self->state.params.request_timeout;
  self->request(self->state.params.connector, timeout, caf::connect_atom::value, host, port)
    .then(
      [=](const caf::node_id&, caf::strong_actor_ptr& remote,
          const std::set<std::string>& ifs) {
        if (!remote)
          return failed(self, ep, "nothing is published there");
        if (ifs != self->state.params.gateway_signature)
          return failed(self, ep, "what is published there is not a ferry gateway");
        auto gw = caf::actor_cast<gateway_actor>(std::move(remote));
        auto mine = self->state.params.own_hello();
        self->request(gw, timeout, hello_atom::value, mine)
          .then(
            [=](peer_hello& theirs) {
              if (theirs.gateway.node() != gw.node())
                return failed(self, ep, "its hello names a gateway on another node");
              if (theirs.worker_id == mine.worker_id) {
                self->state.table.dialled(ep, 0, true);
                update_ready(self);
                return;
              }
              // Keep the address we dialled: it is reachable by definition.
              theirs.host = host;
              theirs.port = port;
              auto wid = theirs.worker_id;
              auto token_in = control_token_of(mine.capabilities).value_or(0);
              self->request(self->state.gateway, timeout, add_peer_atom::value, theirs,
                            token_in)
                .then(
                  [=](caf::ok_atom) {
                    self->state.table.dialled(ep, wid, false);
                    update_ready(self);
                    self->request(gw, timeout, members_atom::value)
                      .then([=](std::vector<std::string>& eps) { learn_all(self, eps); },
                            [=](caf::error& err) {
                              spdlog::debug("members of {}: {}", ep, describe(err));
                            });
                  },
                  [=](caf::error& err) { failed(self, ep, describe(err)); });
            },
            [=](caf::error& err) { failed(self, ep, "hello: " + describe(err)); });
      },
      [=](caf::error& err) { failed(self, ep, self->system().render(err)); });
}

void dial_due(membership_ptr self) {
  if (!self->state.started)
    return;
  for (const auto& ep : self->state.table.take_due(member_table::clock::now()))
    dial(self, ep);
  arm(self);
}

caf::behavior membership(membership_ptr self, membership_params params) {
  self->state.params = std::move(params);
  self->state.table = member_table{self->state.params.join};
  update_ready(self); // no join targets: ready at once
  return {
    [=](join_atom, gateway_actor& gw, const std::string& self_endpoint) {
      auto& st = self->state;
      st.gateway = std::move(gw);
      if (!self_endpoint.empty())
        st.table.set_self(self_endpoint);
      st.started = true;
      update_ready(self);
      dial_due(self);
    },
    [=](member_atom, const std::string& ep) {
      if (parse_endpoint(ep) && self->state.table.learn(ep, member_table::clock::now()))
        dial_due(self);
    },
    [=](peer_joined_atom, uint64_t worker_id, const std::string& ep) {
      self->state.table.joined(worker_id, ep);
      update_ready(self);
    },
    [=](peer_down_atom, uint64_t worker_id) {
      self->state.table.left(worker_id, member_table::clock::now());
      dial_due(self);
    },
    [=](tick_atom) {
      self->state.tick_armed = false;
      dial_due(self);
    },
  };
}

} // namespace

caf::actor spawn_membership(caf::actor_system& sys, membership_params params) {
  return sys.spawn(membership, std::move(params));
}

} // namespace ferry
