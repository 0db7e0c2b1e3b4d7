#include "runtime/openssl_error_queue.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

namespace {

template <class Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

using io_fn = int (*)(SSL*, void*, int);
using const_io_fn = int (*)(SSL*, const void*, int);
using handshake_fn = int (*)(SSL*);

io_fn real_read() {
  static const auto fn = next_symbol<io_fn>("SSL_read");
  return fn;
}
const_io_fn real_write() {
  static const auto fn = next_symbol<const_io_fn>("SSL_write");
  return fn;
}
handshake_fn real_accept() {
  static const auto fn = next_symbol<handshake_fn>("SSL_accept");
  return fn;
}
handshake_fn real_connect() {
  static const auto fn = next_symbol<handshake_fn>("SSL_connect");
  return fn;
}

/// "ADDRESS:PORT" of the socket's other end ("an unknown peer" if none).
std::string peer_address(SSL* ssl) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  int fd = SSL_get_fd(ssl);
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return "an unknown peer";
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  return std::string{host} + ":" + std::to_string(port);
}

void free_peer(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(ptr);
}

/// The SSL object's slot for the peer's address, noted at its first
/// handshake step: by the time a handshake fails, the peer may have closed
/// the socket, and getpeername() no longer knows it.
int peer_slot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_peer);
  return slot;
}

void note_peer(SSL* ssl) {
  if (peer_slot() >= 0 && !SSL_get_ex_data(ssl, peer_slot()))
    SSL_set_ex_data(ssl, peer_slot(), new std::string{peer_address(ssl)});
}

std::string peer_of(SSL* ssl) {
  if (peer_slot() >= 0)
    if (auto* noted = static_cast<std::string*>(SSL_get_ex_data(ssl, peer_slot())))
      return *noted;
  return peer_address(ssl);
}

/// A handshake that failed for good (not one that waits for more bytes) is
/// logged: CAF closes such a connection without a word.
int logged_handshake(SSL* ssl, int ret, const char* what) {
  if (ret <= 0 && SSL_get_error(ssl, ret) == SSL_ERROR_SSL) {
    char reason[256] = "no reason given";
    if (auto e = ERR_peek_error())
      ERR_error_string_n(e, reason, sizeof reason);
    spdlog::warn("TLS: {} {}: {}", what, peer_of(ssl), reason);
  }
  return ret;
}

} // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  ERR_clear_error();
  return real_read()(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  ERR_clear_error();
  return real_write()(ssl, buf, num);
}

int SSL_accept(SSL* ssl) {
  ERR_clear_error();
  note_peer(ssl);
  return logged_handshake(ssl, real_accept()(ssl), "refused a connection from");
}

int SSL_connect(SSL* ssl) {
  ERR_clear_error();
  note_peer(ssl);
  return logged_handshake(ssl, real_connect()(ssl), "handshake failed with");
}

} // extern "C"

namespace ferry {

bool openssl_error_queue_fix_active() {
  return real_read() && real_write() && real_accept() && real_connect();
}

} // namespace ferry
