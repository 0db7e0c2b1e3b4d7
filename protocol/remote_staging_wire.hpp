// remote_staging_wire: what a requester and a source node exchange in a
// remote staging session (docs/remote-staging.md), and the name of a device
// range a source exposes for it.
//   remote_device_range  what a source hands out for one exposed range:
//                        its node (worker id, incarnation) and the
//                        registration; users pass it in messages as text
//   stage_pin            opens a session: scope, direction, the requester's
//                        chunk size and depth, its deadline budget
//   stage_pin_reply      the session actor and the negotiated geometry
//                        (and, for a READ over UCX, the keys of the
//                        source's slots)
//   stage_slot_key       where a peer may GET one slot's bytes: the
//                        slot's address and its private registration's key
//   stage_frame          every later call (Delegate, QueryDelegate, CROSS,
//                        FinishCross, Unpin): bound to the session's nonce,
//                        registration, phase, chunk and range; the receipt
//                        echoes it
// Must never: be trusted; the source checks every field against its own
// session before it acts (staging/source_ring.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

namespace ferry {

enum class stage_direction : uint8_t {
  read = 0, // source device -> requester device
  write = 1 // requester device -> source device
};

/// "read" or "write".
const char* to_string(stage_direction d);

struct remote_device_range {
  uint64_t source_worker = 0; // the source node's worker id
  uint64_t epoch = 0;         // the source node's incarnation
  uint64_t registration = 0;  // the exposure on that node
  uint64_t bytes = 0;
  friend bool operator==(const remote_device_range& a, const remote_device_range& b) {
    return a.source_worker == b.source_worker && a.epoch == b.epoch
           && a.registration == b.registration && a.bytes == b.bytes;
  }
};

/// "rdr:WORKER:EPOCH:REGISTRATION:BYTES" (each 16 hex digits).
std::string to_string(const remote_device_range& r);
std::optional<remote_device_range> parse_remote_device_range(const std::string& text);

/// How a session's CROSS moves a chunk between the two slots.
enum class stage_cross_mode : uint8_t {
  caf = 0,    // CAF requests in 512 KiB pieces
  ucx_get = 1 // one UCX GET of the other side's registered slot: READ, the
              // requester GETs the source's slot; WRITE, the source GETs
              // the requester's
};

/// "caf" or "ucx_get".
const char* to_string(stage_cross_mode m);

/// The longest packed key a slot may name (as an RDMA descriptor's).
inline constexpr size_t max_stage_slot_key_bytes = 4096;

struct stage_slot_key {
  uint64_t address = 0;
  std::vector<uint8_t> rkey;
  /// Non-empty, at most max_stage_slot_key_bytes, not a null address.
  bool plausible() const;
};

struct stage_pin {
  uint64_t nonce = 0; // fresh per session, chosen by the requester
  uint64_t registration = 0;
  uint64_t epoch = 0;
  uint64_t offset = 0; // into the exposed range
  uint64_t length = 0;
  uint8_t direction = 0; // stage_direction
  uint64_t chunk_size = 0; // the requester's
  uint32_t depth = 1;      // the requester's pipeline depth
  uint32_t budget_ms = 0;  // what is left of the requester's deadline
  uint8_t cross = 0;       // stage_cross_mode the requester asks for
  uint64_t requester_worker = 0; // its node (a WRITE's GETs go there)
};

struct stage_pin_reply {
  caf::actor session;
  uint64_t chunk_size = 0; // negotiated: min of both sides
  uint32_t ring = 1;       // source slots R
  uint32_t cross_window = 1;
  uint8_t cross = 0; // stage_cross_mode the session uses (caf unless asked)
  std::vector<stage_slot_key> slots; // READ over UCX: one per source slot
};

/// Which step a frame belongs to.
enum class stage_phase : uint8_t {
  delegate = 1, // Delegate and QueryDelegate: the source's copy of a chunk
  cross = 2,    // CROSS and FinishCross: a chunk's bytes between the slots
  unpin = 3,    // the session's end (chunk 0, the whole range)
};

struct stage_frame {
  uint64_t nonce = 0;
  uint64_t registration = 0;
  uint8_t phase = 0; // stage_phase
  uint32_t chunk = 0;
  uint64_t offset = 0; // of the chunk, into the session's range
  uint64_t length = 0;
  friend bool operator==(const stage_frame& a, const stage_frame& b) {
    return a.nonce == b.nonce && a.registration == b.registration && a.phase == b.phase
           && a.chunk == b.chunk && a.offset == b.offset && a.length == b.length;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_slot_key& x) {
  return f(caf::meta::type_name("ferry::stage_slot_key"), x.address, x.rkey);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_pin& x) {
  return f(caf::meta::type_name("ferry::stage_pin"), x.nonce, x.registration, x.epoch,
           x.offset, x.length, x.direction, x.chunk_size, x.depth, x.budget_ms, x.cross,
           x.requester_worker);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_pin_reply& x) {
  return f(caf::meta::type_name("ferry::stage_pin_reply"), x.session, x.chunk_size, x.ring,
           x.cross_window, x.cross, x.slots);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_frame& x) {
  return f(caf::meta::type_name("ferry::stage_frame"), x.nonce, x.registration, x.phase,
           x.chunk, x.offset, x.length);
}

} // namespace ferry
