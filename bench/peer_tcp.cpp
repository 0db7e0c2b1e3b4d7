// The tcp role: one connection, requests of 8 bytes (a size, with the top
// bit set for "prepare": grow and fill the buffer, answer 8 bytes), answered
// by that many bytes of the payload pattern from a warm buffer.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "bench/bench_buffer.hpp"
#include "bench/payload.hpp"
#include "bench/peer_roles.hpp"
#include "bench/tcp_stream.hpp"

namespace ferry::bench {

namespace {

constexpr uint64_t prepare_flag = 1ULL << 63;

void serve(int fd) {
  bench_buffer buf;
  for (;;) {
    uint64_t req = 0;
    if (!tcp_recv_all(fd, &req, sizeof(req)))
      return;
    auto size = req & ~prepare_flag;
    if (req & prepare_flag) {
      if (buf.size() < size) {
        buf = bench_buffer{size};
        // The pattern depends on the word index only: every size is a
        // prefix of the largest.
        fill_payload(buf.data(), size);
      }
      if (!tcp_send_all(fd, &size, sizeof(size)))
        return;
      continue;
    }
    if (size > buf.size())
      return; // protocol error: the driver always prepares first
    if (!tcp_send_all(fd, buf.data(), size))
      return;
  }
}

} // namespace

int run_tcp_peer(const peer_options&) {
  std::string err;
  uint16_t port = 0;
  int lfd = tcp_listen_loopback(&port, &err);
  if (lfd < 0) {
    peer_say("error " + err);
    return 1;
  }
  std::atomic<int> conn{-1};
  std::thread server{[&] {
    int fd = tcp_accept(lfd);
    conn = fd;
    if (fd >= 0)
      serve(fd);
  }};
  peer_say("ready " + std::to_string(port));
  std::string line;
  while (peer_hear(&line) && line != "quit") {
    // no other commands
  }
  // Unblock the server thread wherever it is.
  ::shutdown(lfd, SHUT_RDWR);
  if (int fd = conn.load(); fd >= 0)
    ::shutdown(fd, SHUT_RDWR);
  server.join();
  if (int fd = conn.load(); fd >= 0)
    ::close(fd);
  ::close(lfd);
  return 0;
}

} // namespace ferry::bench
