// Test support for ferry_ucx: a real second process that owns registered
// memory, and byte patterns with checksums.
// Owns: the child process (spawned by fork + exec of this test binary, so no
// UCX state crosses the fork) and the socket pair to it.
// Must never: leave a child behind (it dies with the parent and after a
// fixed lifetime), or block the parent without a bound.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process/child_process.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_endpoint.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry::test {

// ---- patterns -------------------------------------------------------------

/// Writes the bytes of pattern `seed` at region offsets [offset, offset + len).
void fill_pattern(void* dst, std::uint64_t seed, std::uint64_t offset, std::size_t len);

/// 64-bit checksum of [data, data + len).
std::uint64_t checksum(const void* data, std::size_t len);

/// Checksum that [offset, offset + len) of pattern `seed` has.
std::uint64_t pattern_checksum(std::uint64_t seed, std::uint64_t offset, std::size_t len);

// ---- the owner child --------------------------------------------------------

/// One registered region the child offers.
struct offered_region {
  bool allocated_by_ucx = false;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  std::uint64_t seed = 0; // pattern the region is filled with
  std::vector<std::uint8_t> rkey;
};

struct child_offer {
  std::vector<char> worker_address;
  std::string transports; // as the child's context saw them
  offered_region plain;   // map(.., allocate_by_ucx = false)
  offered_region ucx;     // map(.., allocate_by_ucx = true)
};

/// Pattern seeds of the two regions.
inline constexpr std::uint64_t plain_seed = 0x1111;
inline constexpr std::uint64_t ucx_seed = 0x2222;

/// Active messages of the owner child (active_messages on): it answers
/// each message of id am_echo_call with the same bytes, as id am_echo_answer,
/// on the reply endpoint UCX gives it.
inline constexpr unsigned am_echo_call = 7;
inline constexpr unsigned am_echo_answer = 8;
/// The same echo, sent back eager only (am_protocol::eager_only).
inline constexpr unsigned am_echo_eager_call = 9;

class owner_child {
public:
  /// Starts a child with UCX_TLS=`tls`, UCX_NET_DEVICES=lo, which maps two
  /// regions of `region_bytes`, fills them, offers them and then progresses
  /// its worker (sleeping in wait_for_events) until told otherwise; with
  /// `active_messages` its context has UCP_FEATURE_AM and it echoes (above).
  /// On failure, error() says why and offer() is empty.
  owner_child(const std::string& tls, std::size_t region_bytes,
              bool active_messages = false);
  owner_child(const owner_child&) = delete;
  owner_child& operator=(const owner_child&) = delete;
  /// quit(), or kill if that does not work.
  ~owner_child();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const child_offer& offer() const { return offer_; }
  pid_t pid() const { return child_.pid(); }

  /// The child stops progressing its worker (blocks on the socket) and
  /// confirms. It only resumes on quit().
  bool halt();
  /// Asks the child to clean up and exit; true when it exited with 0.
  bool quit();
  /// SIGKILL and reap.
  void kill_now();

private:
  process::child_process child_;
  int fd_ = -1;
  std::string error_;
  child_offer offer_;
};

/// Sets UCX_TLS and UCX_NET_DEVICES=lo in this process (before ucp_init).
void set_ucx_env(const std::string& tls);

// ---- a UCX stack in this process --------------------------------------------

/// set_ucx_env(tls), then a context, a worker and an endpoint: to the
/// worker itself (loopback), or to the worker at `peer_address`. `error`
/// names the first step that failed; the members after it stay null.
struct ucx_stack {
  explicit ucx_stack(const std::string& tls) { open(tls, nullptr, false); }
  /// `active_messages`: the context has UCP_FEATURE_AM.
  ucx_stack(const std::string& tls, const std::vector<char>& peer_address,
            bool active_messages = false) {
    open(tls, &peer_address, active_messages);
  }
  bool ok() const { return error.empty(); }
  std::string error;
  std::unique_ptr<ucx_context> ctx;
  std::unique_ptr<ucx_worker> worker;
  std::unique_ptr<ucx_endpoint> ep;

private:
  void open(const std::string& tls, const std::vector<char>* peer_address,
            bool active_messages);
};

} // namespace ferry::test
