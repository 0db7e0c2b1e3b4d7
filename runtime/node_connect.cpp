// Dialling a peer: a bounded TCP probe, CAF's connect through the plain or
// the TLS middleman (dialled again when CAF cuts it during its handshake),
// the hello both ways, and the answer registered with the gateway.
#include "runtime/node.hpp"

#include <algorithm>
#include <set>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/cluster/tcp_probe.hpp"
#include "rdma/control_channel_choice.hpp"
#include "protocol/errors.hpp"

namespace ferry {

caf::expected<peer_hello> node::connect(const std::string& endpoint) {
  auto ep = parse_endpoint(endpoint);
  if (!ep)
    return ep.error();
  return connect(ep->first, ep->second);
}

/// The gateway published at host:port, within `timeout`. (The middleman's
/// own remote_actor waits without a bound, and for minutes when the port
/// publishes something that is not a gateway.)
caf::expected<gateway_actor> node::dial_gateway(const std::string& host, uint16_t port) {
  // Dials in all, while the request timeout lasts, when CAF cuts them. One
  // more dial after a cut almost always gets through (a tick has just
  // passed). More would be harmful: a listener that never speaks also ends
  // each dial with connection_timeout, every dial fills a slot of its
  // accept queue, and once that is full CAF's connect() blocks the node's
  // middleman thread, all of its networking, for the kernel's SYN retries
  // (about two minutes; HostileEndpoint.ConnectingToWhatIsNoGateway...).
  constexpr int max_dial_attempts = 3;
  using clock = std::chrono::steady_clock;
  auto where = host + ":" + std::to_string(port);
  // CAF's connect would block its middleman for minutes on an address that
  // drops packets (actors/cluster/tcp_probe.hpp): probe it within the bound first.
  if (auto err = probe_tcp(host, port, cfg_.request_timeout()))
    return make_error(is(err, errc::timeout) ? errc::timeout : errc::io_error,
                      "cannot connect to " + where + ": " + describe(err));
  auto deadline = clock::now() + cfg_.request_timeout();
  auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()),
                    std::chrono::milliseconds{1});
  };
  caf::expected<gateway_actor> result = make_error(errc::timeout);
  // CAF 0.17.6 starts a dialled connection's heartbeat clock at zero, so a
  // heartbeat tick that comes before the other side's BASP handshake cuts
  // the connection at once with sec::connection_timeout (seen with TLS,
  // whose handshake takes longer; docs/known-issues.md). A tick has just
  // passed then, so dialling again has a whole heartbeat interval.
  for (int attempt = 1;; ++attempt) {
    bool cut_by_heartbeat = false;
    caf::scoped_actor self{*sys_};
    self->request(connector(), left(), caf::connect_atom::value, host, port)
      .receive(
        [&](const caf::node_id&, caf::strong_actor_ptr& remote,
            const std::set<std::string>& ifs) {
          if (!remote)
            result = make_error(errc::io_error, "nothing is published at " + where);
          else if (ifs != sys_->message_types<gateway_actor>())
            result = make_error(errc::io_error,
                                "the actor published at " + where
                                  + " is not a ferry node's gateway");
          else
            result = caf::actor_cast<gateway_actor>(std::move(remote));
        },
        [&](caf::error& err) {
          cut_by_heartbeat = err == caf::sec::connection_timeout;
          result = make_error(err == caf::sec::request_timeout ? errc::timeout
                                                               : errc::io_error,
                              "cannot connect to " + where + ": " + sys_->render(err));
        });
    if (!cut_by_heartbeat || attempt == max_dial_attempts || clock::now() >= deadline)
      return result;
    spdlog::debug("connect to {}: cut by a heartbeat tick during the handshake, dialling again",
                  where);
  }
}

caf::expected<peer_hello> node::connect(const std::string& host, uint16_t port) {
  if (tls_error_)
    return tls_error_;
  auto remote = dial_gateway(host, port);
  if (!remote)
    return remote.error();
  auto mine = hello();
  caf::scoped_actor self{*sys_};
  caf::expected<peer_hello> result = make_error(errc::timeout);
  self->request(*remote, cfg_.request_timeout(), hello_atom::value, mine)
    .receive([&](peer_hello& theirs) { result = std::move(theirs); },
             [&](caf::error& err) {
               result = make_error(errc::io_error,
                                   "hello to " + host + ":"
                                     + std::to_string(port)
                                     + " failed: " + sys_->render(err));
             });
  if (!result)
    return result;
  // The answer speaks for the node we dialled: its gateway must live there
  // (the peer's leases and control-channel calls are attributed to it).
  if (result->gateway.node() != remote->node())
    return make_error(errc::protocol_violation,
                      "the hello from " + host + ":" + std::to_string(port)
                        + " names a gateway on another node");
  // Keep the host we dialled: it is reachable from here by definition.
  result->host = host;
  result->port = port;
  auto token_in = control_token_of(mine.capabilities).value_or(0);
  self->request(gateway_, cfg_.request_timeout(), add_peer_atom::value, *result, token_in)
    .receive([](caf::ok_atom) {},
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace ferry
