// tcp_stream: the few blocking socket calls the tcp_loopback scenario and
// its peer share: listen on 127.0.0.1, connect, send and receive exactly
// n bytes. TCP_NODELAY is set on every stream (requests are 8 bytes).
// Owns: nothing (plain file descriptors, closed by the caller).
// Must never: block forever on connect (bounded retries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ferry::bench {

/// Listens on 127.0.0.1:0; returns the fd and sets *port, or -1 and *error.
int tcp_listen_loopback(uint16_t* port, std::string* error);

/// Accepts one connection (blocking); -1 on failure.
int tcp_accept(int listen_fd);

/// Connects to 127.0.0.1:port; -1 and *error on failure.
int tcp_connect_loopback(uint16_t port, std::string* error);

/// Sends or receives exactly n bytes; false on error or EOF.
bool tcp_send_all(int fd, const void* data, size_t n);
bool tcp_recv_all(int fd, void* data, size_t n);

} // namespace ferry::bench
