// tcp_probe: "does HOST:PORT accept a TCP connection within this bound?"
//
// CAF 0.17's middleman connects with a blocking connect() on its own
// thread: to an address that drops packets (a host cut off, a dead pod's
// IP) it waits out the kernel's SYN retries, about two minutes, and every
// other connect and publish of the node queues behind it. So every dial
// first probes the address with a non-blocking connect bounded by the
// request timeout, and only an address that answered is handed to CAF.
// The probe resolves the name (getaddrinfo may block for the resolver's
// own timeouts) and so runs in plain code or in the detached prober actor,
// never in a cooperative actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/fwd.hpp>

namespace ferry {

/// None when a TCP connection to host:port was accepted within `bound`;
/// errc::io_error (refused, unreachable, no such host) or errc::timeout.
caf::error probe_tcp(const std::string& host, uint16_t port,
                     std::chrono::milliseconds bound);

/// A detached actor: (probe_atom, host, port, bound in ms) -> ok_atom or
/// the probe's error.
caf::actor spawn_tcp_prober(caf::actor_system& sys);

} // namespace ferry
