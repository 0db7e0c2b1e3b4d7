// slot_store: the owner's table of staged payloads, their references and
// their leases. A plain data structure: no actors, no threads, no clock of its
// own (every call that needs time takes `now`), so its rules are unit-tested.
//
// Rules:
// - register_data gives a slot with refcount 1; ref adds one.
// - acquire takes a read lock (a lease) and opens one chunked transfer.
// - detach drops a lease; release drops a lease and one reference; unref
//   drops a reference no lease holds (never one a lease will release).
// - A slot is freed when its refcount is zero and no lease remains.
// - A lease acquired with a deadline ends when no pull or renewal touches it
//   within that time; a slot with a time-to-live is freed at its expiry with
//   every lease on it, once no RDMA lease is left on it (a GET may be
//   reading its registered memory; those leases have deadlines of their
//   own). sweep(now) enforces both.
// - A slot is staged in plain memory, in a pinned (registered) block, or in
//   a caller's external region (a block viewing the region, whose release
//   drops the region's anchor); all serve chunks. Chunks of a region slot
//   are copied under the region's copy gate and refused after its latch.
// - An RDMA lease (acquire_rdma) always has a deadline while its GET runs,
//   and a silent one is force-released (the lease and one reference) by
//   sweep: its consumer died or hung mid-GET.
// - Every lease names its holder (the node that took it; 0 = this node).
//   drop_holder ends every lease of a holder that went away, at once.
// - A slot addressed to one holder (address_to: a copy staged for one
//   reader node, as the messenger stages) loses its stager's reference when
//   that holder goes away (drop_holder), as unref would: nobody else will
//   fetch it, so it does not wait for its time-to-live.
// - hold turns a lease whose transfer is done into a plain held lease, the
//   same on both paths: no deadline, no transfer, never reaped; it ends at
//   detach, release, drop_holder, or the slot's time-to-live. Only the
//   consumer's hold does so: a chunked lease whose last chunk was served
//   (an eager answer too) keeps its deadline until the hold comes, so a
//   lease whose answer never reached its consumer (lost with a connection,
//   or come after the consumer's timeout) ends with its deadline instead
//   of staying held for as long as the consumer's node lives. A consumer
//   from before holds (its acquire does not say `holds`) sends none: its
//   lease is held as its transfer is done, as it always was.
// - An RDMA lease that ends while its GET may still run (its consumer says
//   so at detach or release, the sweep reaps it, its holder went away)
//   leaves its holder on the slot as a possible reader; a pinned slot freed
//   with possible readers hands its block out (take_unsettled) for the
//   owner's quarantine (rdma_quarantine.hpp) instead of letting it go.
// Must never: hand out a view into a freed slot, or free a slot a lease reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "protocol/byte_buffer.hpp"
#include "protocol/chunk_bytes.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/rv_messages.hpp"
#include "rdma/external_region.hpp"
#include "rdma/pinned_block.hpp"

namespace ferry {

class slot_store {
public:
  using clock_type = std::chrono::steady_clock;
  using time_point = clock_type::time_point;
  using duration = clock_type::duration;

  static constexpr uint64_t default_chunk_size = 512 * 1024;

  struct stats {
    uint64_t slots = 0;
    uint64_t staged_bytes = 0;
    uint64_t leases = 0;
    uint64_t transfers = 0;
  };

  /// One slot as `ferry stat` shows it: what keeps it, and for how long.
  struct slot_summary {
    data_handle handle;
    uint64_t bytes = 0;
    uint64_t refcount = 0;      // references left (0: only leases keep it)
    uint64_t leases = 0;
    uint64_t held_leases = 0;   // leases with no deadline (held after a get)
    uint64_t rdma_leases = 0;
    uint64_t addressed_to = 0;  // the holder it was staged for (0: any)
    bool pinned = false;
    duration age{};
    std::optional<duration> expires_in; // its time-to-live left
  };

  struct sweep_result {
    uint64_t leases_expired = 0;     // chunked leases ended by their deadline
    uint64_t rdma_leases_reaped = 0; // RDMA leases force-released
    uint64_t slots_expired = 0;
  };

  /// A block freed while GETs of `readers` (holders) may still read it.
  struct unsettled_block {
    pinned_ptr block;
    uint64_t len = 0;
    std::set<uint64_t> readers;
  };

  /// What an RDMA grant needs: the lease and the block it reads.
  struct rdma_grant {
    uint64_t lease_id = 0;
    pinned_ptr block;
    uint64_t total_len = 0;
  };

  explicit slot_store(uint64_t worker_id,
                      uint64_t chunk_size = default_chunk_size);

  uint64_t worker_id() const { return worker_id_; }
  uint64_t chunk_size() const { return chunk_size_; }

  /// Stages `bytes`; a `ttl` frees the slot at now + ttl whatever holds it.
  data_handle register_data(byte_buffer bytes, time_point now,
                            std::optional<duration> ttl = std::nullopt);

  /// Stages `len` bytes already copied into a pinned block.
  data_handle register_pinned(pinned_ptr block, uint64_t len, time_point now,
                              std::optional<duration> ttl = std::nullopt);

  /// Stages `len` bytes of `region` at `offset`, read through `view` (a
  /// block over that range whose release drops the slot's anchor).
  data_handle register_in_region(pinned_ptr view, external_region_ptr region,
                                 uint64_t offset, uint64_t len, time_point now,
                                 std::optional<duration> ttl = std::nullopt);

  /// The shutdown drain moves every arena-pinned slot to plain memory
  /// (and a payload the owner registered in place: a pinned block too;
  /// slots in a caller's region stay), in two steps so the copies can run elsewhere: the
  /// slots to demote, then each copy handed back. A slot released (or
  /// restaged) meanwhile keeps what it has; finish_demotion answers whether
  /// it took the copy. The old block is the caller's to keep: a GET whose
  /// requests are still queued in the UCX worker may read it.
  struct demotion {
    uint64_t slot_id = 0;
    pinned_ptr block;
    uint64_t len = 0;
  };
  std::vector<demotion> plan_demotion() const;
  bool finish_demotion(const demotion& d, byte_buffer bytes);

  caf::expected<rv_metadata_response> metadata(const data_handle& h) const;

  /// The pinned block of a slot (null when it is staged in plain memory).
  caf::expected<pinned_ptr> pinned_block_of(const data_handle& h) const;

  /// Takes an RDMA lease with `deadline`; the caller checked the slot is
  /// pinned. Refused when the slot's region is being unregistered.
  caf::expected<rdma_grant> acquire_rdma(const data_handle& h, time_point now,
                                         duration deadline, uint64_t holder = 0);

  /// Takes a lease and opens a chunked transfer. A non-zero `lease_deadline`
  /// ends the lease when nothing touches it for that long. An empty payload
  /// has nothing to pull: its transfer is done at once (transfer id 0).
  /// `consumer_holds`: the consumer sends a hold once it has the bytes, so a
  /// done transfer's lease keeps its deadline until then; false (a consumer
  /// from before holds): the lease is held as its transfer is done.
  caf::expected<rv_ready> acquire(const data_handle& h, time_point now,
                                  duration lease_deadline = duration::zero(),
                                  uint64_t holder = 0, bool consumer_holds = true);

  /// One chunk of an open transfer; renews the lease's deadline. Each chunk
  /// is served once (a repeat is a protocol violation and changes nothing);
  /// once every chunk was, the transfer is done (no more pulls) and the
  /// lease keeps its deadline until the consumer holds it. A view of
  /// plain staged bytes that keeps them alive; a copy of registered memory
  /// (an arena block or a region), whose lifetime the slot does not own.
  caf::expected<chunk_bytes> pull(uint64_t transfer_id, uint64_t index,
                                 time_point now);

  caf::expected<uint64_t> ref(const data_handle& h);

  /// Drops one reference held by no lease (the stager's own, when nobody
  /// will fetch the payload); whether the slot was freed. Refused while
  /// every reference belongs to a lease that will release it.
  caf::expected<bool> unref(const data_handle& h);

  /// `get_may_run`: the lease's GET was given up, not finished, so UCX may
  /// still serve it (an RDMA lease only; ignored for any other).
  caf::error detach(const data_handle& h, uint64_t lease_id, bool get_may_run = false);

  caf::expected<rv_release_response> release(const data_handle& h,
                                             uint64_t lease_id,
                                             bool get_may_run = false);

  caf::error renew(const data_handle& h, uint64_t lease_id, time_point now);

  /// The lease's transfer is done: it keeps no deadline and no transfer from
  /// now on (an RDMA lease stops counting as a descriptor out).
  caf::error hold(const data_handle& h, uint64_t lease_id);

  /// Marks `h` as staged for `holder` (non-zero) alone. Unknown handle:
  /// the slot went already (it was fetched and released).
  caf::error address_to(const data_handle& h, uint64_t holder);

  struct holder_dropped {
    uint64_t leases = 0; // leases of the holder ended
    uint64_t copies = 0; // stager references dropped from slots addressed to it
  };

  /// Ends every lease `holder` (non-zero) has, as detach would, and drops
  /// the stager's reference of every slot addressed to it, as unref would.
  holder_dropped drop_holder(uint64_t holder);

  /// Ends expired leases and frees expired slots.
  sweep_result sweep(time_point now);

  /// True while any lease deadline or slot time-to-live exists.
  bool has_deadlines() const;

  /// The blocks of slots freed while a GET may still read them, since the
  /// last call (the owner quarantines them).
  std::vector<unsettled_block> take_unsettled();

  /// RDMA leases currently held (descriptors out).
  uint64_t rdma_leases() const { return rdma_lease_count_; }

  stats current_stats() const;

  /// The `max` oldest slots, oldest first (a slot that lingers shows here).
  std::vector<slot_summary> oldest_slots(time_point now, size_t max) const;

private:
  struct lease {
    uint64_t transfer_id = 0; // 0 for an RDMA lease or a done one
    bool held_when_done = false; // its consumer sends no hold (an old one)
    uint64_t served = 0;      // distinct chunks answered on its transfer
    std::vector<bool> pulled; // which of them (a chunk is served once)
    bool rdma = false;        // a GET may be reading (descriptor out)
    uint64_t holder = 0;
    duration deadline_period = duration::zero(); // zero: no deadline
    time_point expires_at{};
  };

  struct slot {
    std::shared_ptr<const byte_buffer> bytes; // plain memory (shared with
                                              // chunks in flight), or null
    pinned_ptr pinned;   // a registered block (or a view of a region)
    external_region_ptr region; // set for a slot staged in a region
    uint64_t region_offset = 0;
    uint64_t len = 0;
    const char* data() const { return pinned ? pinned->data() : bytes->data(); }
    uint64_t refcount = 1;
    std::unordered_map<uint64_t, lease> leases;
    std::optional<time_point> expires_at; // time-to-live
    std::set<uint64_t> get_readers; // holders whose GET may still read it
    uint64_t addressed_to = 0;      // the one holder it was staged for (0: any)
    time_point staged_at{};
  };

  struct transfer {
    uint64_t slot_id = 0;
    uint64_t lease_id = 0;
  };

  slot* find(const data_handle& h);
  caf::expected<lease*> find_lease(const data_handle& h, uint64_t lease_id);
  const slot* find(const data_handle& h) const;
  caf::error end_lease(slot& s, uint64_t lease_id, bool get_may_run);
  void free_slot(uint64_t slot_id);
  void free_if_unreferenced(uint64_t slot_id);
  uint64_t chunk_count(const slot& s) const;
  data_handle add_slot(slot s, time_point now, std::optional<duration> ttl);
  uint64_t add_lease(slot& s, lease l, time_point now, duration deadline);
  void forget_lease(const lease& l);
  static void note_reader(slot& s, const lease& l, bool get_may_run);
  void transfer_done(lease& l);
  void make_held(lease& l);
  static bool has_rdma_lease(const slot& s);

  uint64_t worker_id_;
  uint64_t chunk_size_;
  uint64_t next_slot_id_ = 1;
  uint64_t next_lease_id_ = 1;
  uint64_t staged_bytes_ = 0;
  uint64_t lease_count_ = 0;
  uint64_t rdma_lease_count_ = 0;
  uint64_t deadline_count_ = 0; // leases with a deadline + slots with a TTL
  std::unordered_map<uint64_t, slot> slots_;
  std::unordered_map<uint64_t, transfer> transfers_;
  std::vector<unsettled_block> unsettled_;
};

} // namespace ferry
