#include "actors/cluster/tcp_probe.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"

namespace ferry {

namespace {

/// One address: connect without blocking, wait for the answer up to `until`.
caf::error try_address(const addrinfo& ai, std::chrono::steady_clock::time_point until,
                       const std::string& where) {
  int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai.ai_protocol);
  if (fd < 0)
    return make_error(errc::io_error, where + ": socket: " + std::strerror(errno));
  std::unique_ptr<int, void (*)(int*)> guard{&fd, [](int* p) { ::close(*p); }};
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) == 0)
    return caf::none;
  if (errno != EINPROGRESS)
    return make_error(errc::io_error, where + ": " + std::strerror(errno));
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return make_error(errc::timeout, where + ": no answer to a TCP connect");
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      continue; // the deadline check above ends it
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
      return make_error(errc::io_error, where + ": " + std::strerror(err));
    return caf::none;
  }
}

} // namespace

caf::error probe_tcp(const std::string& host, uint16_t port,
                     std::chrono::milliseconds bound) {
  auto where = host + ":" + std::to_string(port);
  auto until = std::chrono::steady_clock::now() + bound;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0)
    return make_error(errc::io_error, where + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list{found, freeaddrinfo};
  caf::error last = make_error(errc::io_error, where + ": no address");
  for (auto* ai = found; ai != nullptr; ai = ai->ai_next) {
    last = try_address(*ai, until, where);
    if (!last || is(last, errc::timeout))
      return last;
  }
  return last;
}

namespace {

caf::behavior prober(caf::event_based_actor*, int) {
  return {
    [](probe_atom, const std::string& host, uint16_t port,
       uint64_t bound_ms) -> caf::result<caf::ok_atom> {
      if (auto err = probe_tcp(host, port, std::chrono::milliseconds{bound_ms}))
        return err;
      return caf::ok_atom::value;
    },
  };
}

} // namespace

caf::actor spawn_tcp_prober(caf::actor_system& sys) {
  return sys.spawn<caf::detached + caf::hidden>(prober, 0);
}

} // namespace ferry
