// transfer: the consumer's rules for one get, as a plain state machine.
// Events go in (the acquire's answer, a chunk, a destination granted or
// refused, the GET done or failed, a renewal tick, the get's deadline, the
// owner or the caller gone, a request that failed); commands come out
// (acquire with or without an offer, pull chunk i, allocate a destination,
// GET into it, renew, detach, hold now or later, write a chunk, count a
// path decision, arm the deadline, deliver, fail).
// No CAF actors, no threads, no clock: the consumer actor is a thin shell
// that turns messages into events and commands into messages, and which
// channel carries a command is the shell's business.
//
// Rules it owns:
// - The lease asked for: the configured transfer lease, but never less than
//   two request timeouts (a pull renews it, and answers or fails within one).
// - The whole get ends by its deadline (transfer_timeout): timeout, the
//   lease detached.
// - The offer comes from local facts only (a registry, the kill switch off,
//   the owner registered on UCX); each missing fact is counted.
// - Every acquire asks for a lease deadline; a finished get tells the owner
//   to hold its lease with none (hold) right after it delivers, by either
//   path (the owner never drops a deadline by itself: a lease whose answer
//   was lost on the way ends with it).
// - Sizes from the owner are checked before anything is allocated: the
//   chunk layout, staged_payload_max, and the caller's room.
// - Eager: every acquire but get_pinned's asks for the payload inside the
//   answer when it is at most eager_max; an eager answer that was not asked
//   for, is larger than asked, has more than one chunk, or whose bytes do
//   not match its length is a protocol violation (its lease detached).
// - Chunks: at most pull_window pulls in flight; each chunk must have the
//   size its index implies; any arrival order; a chunk that was not pulled,
//   or came already, is a protocol violation.
// - RDMA: a descriptor that does not decode (or disagrees with total_len),
//   no registered destination, or a failed GET falls back exactly once:
//   detach, acquire with no offer, pull chunks. A second descriptor is an
//   error. While the GET runs, a renewal every half lease timeout (5 ms
//   floor); a lease timeout of 0 starts none. A GET given up while UCX may
//   still write a caller's writer fails the get instead of reusing it (a
//   GET abandoned, or one that timed out, may still be written); any
//   failure while that GET runs (the deadline, the owner or the caller
//   gone) is get_abandoned too, naming its cause: the writer is unsafe.
// - A plain get's GET lands in its result buffer where the transports
//   allow it (get_into_result), else in a registered block.
// - The hold after a GET goes later, through the consumer service, when it
//   may (defer_holds) and its bound leaves min_hold_deferral; else at once.
// - On any failure after the lease was granted it detaches the lease,
//   except when the owner is gone. A detach (or release) of a lease whose
//   GET was posted and has not ended (given up: get_abandoned or a timeout;
//   or the get ended while it ran) says get_unfinished.
// - A single-use get (a transparently staged payload) releases instead:
//   after it delivered, and on any failure holding a lease (over
//   staged_payload_max too), so the owner frees its copy; nobody else
//   would ever read it.
// Must never: ask for a destination larger than the checks allowed, or
// deliver twice.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <caf/error.hpp>

#include "actors/rendezvous/path_metrics.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/rdma_descriptor.hpp"
#include "protocol/rv_messages.hpp"

namespace ferry {

class transfer {
public:
  /// Where the bytes go.
  enum class into {
    buffer,        // a fresh buffer the shell reserves (get)
    raw,           // a caller's plain memory (get_into)
    pinned_result, // a pool block handed to the caller (get_pinned)
    pinned_writer, // a caller's registered block: GET straight into it
  };

  struct params {
    data_handle handle;
    into dest = into::buffer;
    uint64_t room = 0;              // raw / pinned_writer: the caller's bytes
    bool rdma_registry = false;     // this node has UCX (registered memory)
    bool rdma_enabled = true;       // its kill switch is off
    bool ucx_peer = false;          // GETs from the owner may go (peer_directory's ucx_gets)
    uint64_t staged_payload_max = 0; // 0: no limit
    uint32_t pull_window = 8;
    uint64_t eager_max = 0; // the payload inside the acquire's answer up to this (0: never)
    std::chrono::milliseconds lease{30000}; // the configured transfer lease
    std::chrono::milliseconds request_timeout{0}; // the lease is at least twice it
    std::chrono::milliseconds deadline{0}; // the whole get (0: none)
    bool single_use = false; // release, never hold or detach (see above)
    bool get_into_result = false; // a plain get's GET may land in its result
    bool defer_holds = false;     // the shell can send a hold later
  };

  /// A hold that must reach the owner sooner than this goes out at once: a
  /// late hold loses the lease (and, on the RDMA path, a reference), so a
  /// deferred one keeps at least this much margin (a lease timeout of 4 s or
  /// more; the default is 30 s).
  static constexpr std::chrono::milliseconds min_hold_deferral{1000};

  // -- commands ---------------------------------------------------------------
  struct send_acquire { rv_acquire_request request; };
  struct send_pull { uint64_t transfer_id; uint64_t index; };
  /// A destination of `bytes`: a registered block for the GET or for
  /// pinned_result chunks, or (`into_result`) the plain get's result buffer
  /// itself, which the GET writes with no registration.
  struct alloc_destination { uint64_t bytes; bool for_get; bool into_result = false; };
  /// GET the descriptor's range into the destination (the granted block, or
  /// the caller's writer).
  struct start_get { rdma_descriptor descriptor; };
  /// Deliver a renewal tick after `period`.
  struct schedule_renewal { std::chrono::milliseconds period; };
  struct send_renew { uint64_t lease_id; };
  /// `get_unfinished`: the lease's GET was posted and has not ended (given
  /// up, or the get ended while it ran), so the owner's worker may still
  /// serve it: the owner keeps the block out of reuse until it cannot.
  struct send_detach { uint64_t lease_id; bool get_unfinished = false; };
  /// A single-use get is done with the lease and the reference.
  struct send_release { uint64_t lease_id; bool get_unfinished = false; };
  /// The transfer is done: the lease is held with no deadline from now on.
  /// The owner must have it `within` (0: at once), a quarter of the lease
  /// timeout, inside the deadline the last renewal left. `deferred`: the
  /// shell hands it to the consumer service, which waits that long and drops
  /// it if the caller ended the lease first; else it goes now.
  struct send_hold {
    uint64_t lease_id;
    std::chrono::milliseconds within{0};
    bool deferred = false;
  };
  /// Deliver on_deadline() after `after` (once, at the start).
  struct schedule_deadline { std::chrono::milliseconds after; };
  /// Buffer mode: reserve room for the whole payload (chunks append).
  struct reserve { uint64_t bytes; };
  /// Write the chunk just received at `offset` of the destination.
  /// `eager`: the bytes came with the acquire's answer, not a pull.
  struct write_chunk { uint64_t index; uint64_t offset; bool eager = false; };
  struct count { transfer_path path; path_reason reason; };
  /// Answer the caller: `total_len` bytes, lease `lease_id`.
  struct deliver { uint64_t total_len; uint64_t lease_id; bool by_rdma; };
  struct fail { caf::error error; };

  using command = std::variant<send_acquire, send_pull, alloc_destination, start_get,
                               schedule_renewal, schedule_deadline, send_renew,
                               send_detach, send_release, send_hold,
                               reserve, write_chunk, count, deliver, fail>;
  using commands = std::vector<command>;

  explicit transfer(params p);

  // -- events -----------------------------------------------------------------
  /// The owner is known: the first acquire (with an offer if the facts allow).
  commands start();
  /// `eager_bytes`: the bytes that came with an eager acquire's answer
  /// (nullopt: the plain acquire went out, or an owner that has no eager one).
  /// An answer that comes after the get ended (its caller went, its
  /// deadline passed) hands the lease it grants straight back.
  commands on_acquired(const rv_acquire_response& answer,
                       std::optional<uint64_t> eager_bytes = std::nullopt);
  /// A chunk of `size` bytes answered the pull of `index`.
  commands on_chunk(uint64_t index, uint64_t size);
  /// The registered destination asked for was granted or refused.
  commands on_destination(bool granted);
  commands on_get_done();
  /// The GET failed with `err`; one abandoned (errc::get_abandoned) or
  /// timed out may still be written by UCX.
  commands on_get_failed(const caf::error& err);
  commands on_renew_tick();
  /// The get's deadline passed.
  commands on_deadline();
  commands on_owner_down(const std::string& why);
  commands on_caller_gone();
  /// A request of this transfer failed (acquire, pull, an allocation), or
  /// the shell could not do a command (reserve): the get fails.
  commands on_error(caf::error err);

  bool finished() const { return phase_ == phase::done; }
  /// Where the transfer stands, in words (the phase and its progress): what
  /// a deadline's error names, so a stuck get says where it stuck.
  std::string progress() const;
  bool holds_lease() const { return have_lease_; }
  uint64_t lease_id() const { return lease_id_; }
  uint64_t total_len() const { return total_len_; }
  bool offered() const { return offered_; }
  bool fell_back() const { return fell_back_; }
  /// The payload came with the acquire's answer.
  bool eager() const { return eager_; }

private:
  enum class phase {
    acquiring,    // an acquire is out
    allocating,   // waiting for a registered destination
    getting,      // the GET runs
    pulling,      // chunks are pulled
    done,         // delivered or failed
  };

  std::chrono::milliseconds chunked_lease() const;
  commands acquire(bool allow_offer);
  commands on_ready(const rv_ready& r, std::optional<uint64_t> eager_bytes);
  commands on_rdma(const rv_rdma_grant& g);
  commands fall_back(path_reason reason, bool get_unfinished = false);
  commands begin_get();
  commands finish(bool by_rdma);
  commands failed(caf::error err, bool detach = true);
  caf::error check_size(uint64_t total_len) const;
  void pump(commands& out);

  params p_;
  phase phase_ = phase::acquiring;
  bool offered_ = false;
  bool fell_back_ = false;
  bool have_lease_ = false;
  bool ended_acquiring_ = false; // failed with its acquire out: the answer's lease goes back
  bool renewing_ = false;
  bool chunk_block_ = false; // the destination asked for holds chunks
  bool eager_ = false;       // the payload came with the answer
  uint64_t asked_eager_ = 0; // the eager_max the last acquire asked for
  uint64_t lease_id_ = 0;
  uint64_t total_len_ = 0;
  std::chrono::milliseconds renew_period_{0};
  rdma_descriptor descriptor_;
  rv_ready ready_;
  uint64_t next_index_ = 0;
  std::vector<uint64_t> in_flight_; // pulled, not answered (at most pull_window)
  uint64_t received_ = 0;
};

} // namespace ferry
