// ucx_am_echo: UCX's own active-message round trip, the floor the
// rendezvous control channel is measured against (the ucx_am_rtt rows).
// The peer answers each ping (id 1) with a pong (id 2) carrying the same
// bytes, sent to the reply endpoint UCX hands its handler; the bench times
// ping -> pong, both sides busy-polling their workers.
// Owns: nothing native. An am_inbox is the last message one handler took
// (copied out of UCX's buffer in the callback); an am_send is one posted
// message until UCX has taken its bytes.
// Must never: send or progress from inside a UCX callback (the handler only
// copies), or take a message longer than am_max_message.
#pragma once

#ifdef FERRY_BENCH_WITH_UCX

#include <cstddef>
#include <string>

#include <ucp/api/ucp.h>

namespace ferry::bench {

constexpr unsigned am_ping_id = 1;
constexpr unsigned am_pong_id = 2;
constexpr std::size_t am_max_message = 4096;

/// What one handler last received. `arrived` is set by the callback and
/// cleared by whoever consumes the message.
struct am_inbox {
  char bytes[am_max_message];
  std::size_t length = 0;
  bool arrived = false;
  ucp_ep_h reply_ep = nullptr; // where the sender asked for a reply, else null
  std::string error;           // a message the handler could not take
};

/// Installs the handler for `id` on `worker`: each message lands in *inbox.
/// Empty: installed; else why not.
std::string listen_am(ucp_worker_h worker, unsigned id, am_inbox* inbox);

/// One posted active message.
struct am_send {
  void* request = nullptr; // in progress; null once done or failed
  std::string error;
};

/// Posts `length` bytes as message `id` on `ep`, eager; `want_reply`
/// asks UCX to give the receiver a reply endpoint. The bytes must stay
/// put until am_sent says so.
am_send post_am(ucp_ep_h ep, unsigned id, const void* data, std::size_t length,
                bool want_reply);

/// True once UCX has taken the message's bytes (or it failed: see error);
/// frees the request then. Call between progress calls.
bool am_sent(am_send& send);

} // namespace ferry::bench

#endif
