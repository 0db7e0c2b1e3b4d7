// ucx_active_message: UCX active messages on one worker, the transport of
// the control channel (issue 23): an inbox per message id that takes whole
// messages out of UCX, bounded, and fire-and-forget sends that own their
// bytes until UCX is done with them.
// Owns: the inbox's handler registration (removed when the inbox goes), the
// messages it queued, the UCX buffers of the messages it handed out
// without a copy until their holders let go, and each send's bytes until
// UCX completes the send.
// Threading: the worker's owning thread does everything here: UCX calls the
// inbox's handler from inside progress on that thread. The one exception:
// a message handed out in UCX's buffer may be dropped on any thread; its
// buffer is then queued for the worker's thread to give back (next()).
// Must never: take more than its bounds from a peer (an eager message over
// them is dropped and counted; a rendezvous one is refused, so its sender
// sees the error), call into UCX from inside a UCX callback or off the
// worker's thread, free a send's bytes while UCX may still read them, or
// let the worker go while a buffer it handed out is still held.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <ucp/api/ucp.h>

#include "rdma/received_bytes.hpp"
#include "rdma/ucx_status.hpp"
#include "rdma/ucx_worker.hpp"

namespace ferry {

struct ucx_am_limits {
  size_t max_message = 65ull << 20;       // one message's bytes
  size_t max_queued = 1024;               // messages waiting for next()
  size_t max_queued_bytes = 256ull << 20; // their bytes, rendezvous ones included
  // An eager message at least this long that UCX assembled in a buffer it
  // lets the receiver keep (its fragments gathered: a pull's chunk) is
  // handed out in that buffer, with no copy, while the buffers held so far
  // stay within max_held_bytes; any other is copied out.
  size_t hold_from = 64u << 10;
  size_t max_held_bytes = 64u << 20;
  // At close, how long the inbox waits for holders to let go of the buffers
  // they still hold; any held past it is never given back to UCX (a leak
  // of its bytes, logged) and keeps the worker alive until it is dropped.
  std::chrono::milliseconds hold_wait{500};
};

/// One message, whole: its bytes copied out of UCX, received by
/// rendezvous, or held in UCX's buffer (limits' hold_from).
struct ucx_am_message {
  received_bytes bytes;
  // The endpoint to the sender that UCX handed the handler (the sender
  // asked for one), else null. Valid while the worker lives and the
  // sender's endpoint is not closed; used on the worker's thread only.
  ucp_ep_h reply_ep = nullptr;
};

struct ucx_am_inbox_stats {
  uint64_t received = 0;     // handed out by next()
  uint64_t rendezvous = 0;   // of those, fetched with ucp_am_recv_data_nbx
  uint64_t held = 0;         // of those, handed out in UCX's buffer (no copy)
  uint64_t too_large = 0;    // over max_message: dropped (eager) or refused
  uint64_t queue_full = 0;   // over max_queued or max_queued_bytes
  uint64_t failed = 0;       // a rendezvous receive UCX failed
};

/// The UCX buffers an inbox handed out and their holders have not let go
/// of (ucx_active_message.cpp).
struct ucx_am_holds;

class ucx_am_inbox {
public:
  /// Installs the handler for message `id` on `worker`; one inbox per id.
  static ucx_result<std::unique_ptr<ucx_am_inbox>>
  listen(const ucx_worker& worker, unsigned id, ucx_am_limits limits = {});

  ucx_am_inbox(const ucx_am_inbox&) = delete;
  ucx_am_inbox& operator=(const ucx_am_inbox&) = delete;
  /// Removes the handler and progresses the worker (at most 1 s) for
  /// rendezvous receives still running; any left then keep their buffers
  /// for the rest of the process (UCX may still write them). Gives back the
  /// UCX buffers their holders let go of, waiting hold_wait for those
  /// still held.
  ~ucx_am_inbox();

  /// The oldest message that arrived whole, if any; starts the receives of
  /// rendezvous messages announced since the last call and gives back to
  /// UCX the buffers their holders let go of (call it after progress).
  std::optional<ucx_am_message> next();

  /// UCX buffers handed out in messages and not given back to UCX yet,
  /// and their bytes (a holder that let go counts until the next next()).
  size_t held_now() const;
  size_t held_bytes_now() const;

  /// Messages waiting, and rendezvous ones still being received.
  size_t waiting() const noexcept { return ready_.size() + announced_.size() + receiving_.size(); }
  const ucx_am_inbox_stats& stats() const noexcept { return stats_; }

  // The handler UCX calls (public for the C callback only).
  ucs_status_t on_message(const void* data, size_t length, const ucp_am_recv_param_t* param);

private:
  struct rendezvous {
    void* desc = nullptr;     // UCX's data descriptor, until its receive starts
    void* request = nullptr;  // the receive, while it runs
    std::vector<uint8_t> bytes;
    ucp_ep_h reply_ep = nullptr;
    bool done = false;
    ucs_status_t status = UCS_OK;
  };

  ucx_am_inbox(ucx_worker_ptr worker, unsigned id, ucx_am_limits limits);

  static void on_received(void* request, ucs_status_t status, size_t length,
                          void* user_data);
  bool room_for(size_t length) const noexcept;
  void start_receives();
  void collect_receives();
  bool can_hold(size_t length, const ucp_am_recv_param_t* param) const;
  void give_back_let_go();
  void close_holds();

  ucx_worker_ptr worker_;
  unsigned id_;
  ucx_am_limits limits_;
  std::deque<ucx_am_message> ready_;
  // Each on the heap: a receive's completion callback points at its entry.
  std::list<std::unique_ptr<rendezvous>> announced_; // receive not started
  std::list<std::unique_ptr<rendezvous>> receiving_;
  size_t queued_bytes_ = 0;
  ucx_am_inbox_stats stats_;
  std::shared_ptr<ucx_am_holds> holds_; // shared with every buffer handed out
};

/// A send that completed with an error: the tag it was posted with, and
/// the receiver it was posted to (both as the poster named them).
struct ucx_am_failed_send {
  uint64_t tag = 0;
  uint64_t to = 0;
};

struct ucx_am_send_stats {
  uint64_t posted = 0;
  uint64_t failed = 0; // refused at post, or completed with an error
  // Posted and not completed yet (a rendezvous send needs the sender's
  // progress until the receiver has pulled its bytes), and when that count
  // last changed (a send that never completes, to a dead peer, is seen
  // as stuck by how long nothing changed).
  uint64_t in_flight = 0;
  std::chrono::steady_clock::time_point in_flight_changed{};
  // The sends posted with a tag or a receiver that then completed with an
  // error (the owner of the stats takes them out).
  std::vector<ucx_am_failed_send> failed_sends;
};

/// Posts `bytes` as message `id` on `ep` (`want_reply`: the receiver gets a
/// reply endpoint). The bytes are kept until UCX completes the send, then
/// freed; a send that fails later is counted in `stats` (kept alive by the
/// send until UCX completes it, which may be when the worker goes, after
/// the poster), and, when posted with a `tag` or a receiver `to` (not 0),
/// kept in its failed_sends. An error: UCX refused it at once.
/// `protocol`: any lets UCX choose (large messages by rendezvous, where the
/// receiver reads the sender's memory); eager_only sends every size in
/// eager fragments, so the receiver never reads the sender's memory. Over
/// shared memory without failure reports (UCX 1.13), a sender killed while
/// its receiver reads it by rendezvous (CMA) aborts the receiver's process:
/// the control channel sends eager_only.
enum class am_protocol { any, eager_only };
ucx_status post_am(ucp_ep_h ep, unsigned id, std::vector<uint8_t> bytes, bool want_reply,
                   const std::shared_ptr<ucx_am_send_stats>& stats, uint64_t tag = 0,
                   uint64_t to = 0, am_protocol protocol = am_protocol::any);

/// The same for a message in two parts, `head` and then `tail`, gathered by
/// UCX as it sends (no copy into one buffer): `keep_tail` keeps the tail's
/// bytes alive, unchanged, until UCX completes the send.
struct am_tail {
  std::string_view bytes;
  std::shared_ptr<const void> keep;
};
ucx_status post_am(ucp_ep_h ep, unsigned id, std::vector<uint8_t> head, am_tail tail,
                   bool want_reply, const std::shared_ptr<ucx_am_send_stats>& stats,
                   uint64_t tag = 0, uint64_t to = 0,
                   am_protocol protocol = am_protocol::any);

} // namespace ferry
