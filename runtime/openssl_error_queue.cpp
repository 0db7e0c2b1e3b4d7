#include "runtime/openssl_error_queue.hpp"

#include <dlfcn.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

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
  return real_accept()(ssl);
}

int SSL_connect(SSL* ssl) {
  ERR_clear_error();
  return real_connect()(ssl);
}

} // extern "C"

namespace ferry {

bool openssl_error_queue_fix_active() {
  return real_read() && real_write() && real_accept() && real_connect();
}

} // namespace ferry
