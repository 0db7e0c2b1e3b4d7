// openssl_error_queue: works around a bug of CAF 0.17.6's OpenSSL module.
//
// OpenSSL keeps one error queue per thread and SSL_get_error() reads it:
// it must be empty before each TLS I/O call. CAF's sessions drain it only in
// code compiled out without CAF's logging (Debian's build), so a failed
// handshake or a peer's close leaves errors on the middleman's thread, and
// the next SSL_read of any other connection that merely wants more data is
// taken for a failure: a TLS cluster drops healthy members each time a
// client leaves or an unauthorised peer is refused.
//
// This file defines SSL_read, SSL_write, SSL_accept and SSL_connect in the
// program itself (the dynamic linker prefers them over libssl's for every
// library, libcaf_openssl included): each clears the thread's error queue,
// then calls libssl's own. A handshake refused for good is logged with the
// peer's address and OpenSSL's reason (CAF drops it silently). Linking
// ferry_runtime brings them in.
#pragma once

namespace ferry {

/// True once libssl's functions were found (false: TLS would misbehave, and
/// a TLS node refuses to start).
bool openssl_error_queue_fix_active();

} // namespace ferry
