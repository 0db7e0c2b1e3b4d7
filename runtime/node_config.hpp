// node_config: every knob of a node with its default, in one place. The
// actors' own config structs are derived from it (owner_config(),
// consumer_config()), so a default lives here and nowhere else.
// docs/configuration.md lists them all.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "actors/messenger/messenger.hpp"
#include "actors/rendezvous/consumer_config.hpp"
#include "actors/rendezvous/owner.hpp"

namespace ferry {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t GiB = 1024 * MiB;

struct node_config {
  // -- network ---------------------------------------------------------------
  std::string bind_host = "127.0.0.1"; // where the gateway listens
  std::string advertise_host;          // what peers are told (default: bind_host)
  uint16_t port = 0;                   // 0: any free port
  bool listen = true;                  // false: a client node (ferry put/get)
  int metrics_port = -1;               // -1: no HTTP endpoint, 0: any free port
  std::vector<std::string> join;       // HOST:PORT of members to join by (retried)

  // -- mutual TLS (CAF's OpenSSL module); all three or none ------------------
  std::string tls_ca;   // PEM: the CA whose certificates peers must have
  std::string tls_cert; // PEM: this node's certificate, signed by that CA
  std::string tls_key;  // PEM: its private key

  // -- CAF -------------------------------------------------------------------
  std::string scheduler_policy = "sharing"; // 15 us local round trip vs 91 us
  size_t scheduler_threads = 0;             // 0: effective_scheduler_threads()
  uint64_t heartbeat_interval_ms = 200;     // notices a hung peer
  uint64_t connection_timeout_ms = 2000;

  // -- rendezvous (chunked path) ---------------------------------------------
  uint64_t request_timeout_ms = 10000;   // every cross-node request
  uint64_t transfer_timeout_ms = 300000; // a whole adopt/job step
  uint64_t chunk_size = 512 * KiB;       // DEFAULT_CHUNK_SIZE
  uint32_t pull_window = 8;              // chunk pulls in flight per transfer
  uint64_t eager_max = 16 * KiB;         // payloads up to this ride in the acquire's answer
  uint64_t staged_payload_max = 0;       // 0: no limit
  uint64_t lease_sweep_ms = 100;         // chunked lease deadlines and TTLs

  // -- messenger ---------------------------------------------------------------
  uint64_t staging_threshold = 256 * KiB;   // DEFAULT_THRESHOLD: larger goes by handle
  uint64_t staged_fetch_timeout_ms = 300000; // the longest a staged fetch runs here (0: transfer timeout)
  // Large buffers a finished handler or a caller (give_back) gives back,
  // kept warm for the next fetched payload or get result
  // (actors/rendezvous/warm_buffers.hpp); 0 keeps none.
  uint64_t warm_buffer_bytes = 256 * MiB;
  // After a plain get delivers a large result, a buffer of its size is
  // prepared in the warm buffers on a background thread, for the next one
  // (actors/rendezvous/result_prefiller.hpp); needs warm_buffer_bytes.
  bool warm_buffer_prefill = true;
  // A warm buffer nobody took for this long is let go and its memory handed
  // back (actors/rendezvous/warm_buffer_reaper.hpp); 0: kept until the node
  // stops.
  uint64_t warm_buffer_idle_ms = 60000;
  // A transparently staged payload of at least this many bytes is
  // registered where it lies instead of copied into an arena, where
  // registering memory pins nothing (shared memory, tcp); 0: always copied.
  uint64_t register_in_place_min = 1 * MiB;
  // A plain get's GET lands in its result buffer instead of a registered
  // block copied out afterwards, where the transports allow it (not on a
  // NIC, which would pin the buffer per GET). Off only in tests of the
  // registered destination.
  bool gets_into_result = true;

  // -- RDMA path ---------------------------------------------------------------
  bool ucx = true;          // add the UCX transport (the RDMA registry) if built
  bool rdma_enabled = true; // the kill switch; FERRY_RDMA_RENDEZVOUS_DISABLE wins
  // The RDMA path with peers whose GETs UCX can only emulate (a pair with
  // neither shared memory nor a one-sided NIC: tcp). Off, such a pair takes
  // the chunked path, which is faster there and cannot abort the owner when
  // a reader dies (rdma/one_sided_reads.hpp). FERRY_RDMA_EMULATED_GETS=1
  // turns it on.
  bool rdma_emulated_gets = false;
  uint64_t rdma_min_bytes = 64 * KiB;
  uint64_t lease_timeout_ms = 30000; // clamped to at least 1 ms
  // The longest a freed block that a peer's GET given up may still read
  // waits for that peer's fence (then its endpoints close and it goes).
  uint64_t rdma_quarantine_max_ms = 60000; // clamped to at least 1 ms
  uint64_t initial_arena_bytes = 64 * MiB;
  uint64_t max_arena_bytes = 1 * GiB;
  uint64_t dedicated_arena_min = 64 * MiB;
  uint64_t registered_bytes_budget = 1 * GiB;
  uint64_t arena_reclaim_after_ms = 0; // 0: never
  uint64_t retain_arena_bytes = 64 * MiB;
  uint64_t shutdown_timeout_ms = 30000;
  // UCX endpoints: close those unused this long (0: never; at least 500 ms),
  // after a goodbye to the peer; wire them up at the hello, not the first GET.
  uint64_t ep_idle_timeout_ms = 0;
  bool eager_endpoints = false;
  // The rendezvous calls to peers: "auto" over UCX active messages where
  // both nodes serve that channel, else CAF requests, and CAF requests on a
  // node with TLS (the calls stay inside it); "ucx_am" as auto, under TLS
  // too; "caf" always CAF requests (the kill switch). FERRY_CONTROL_CHANNEL
  // overrides it (docs/control-channel.md).
  std::string control_channel = "auto";
  uint64_t drop_dereg_timeout_ms = 30000;
  // Map the first pooled arena at start. Transparent staging never maps one
  // (a send must not stall on a registration), so without an explicit
  // pinned registration a node's messenger payloads stay on the chunked path.
  bool map_arena_at_start = false;

  // -- CUDA staging (staging/) -------------------------------------------------
  uint64_t staging_chunk_size = 4 * MiB; // at most 64 MiB
  uint64_t staging_chunk_count = 64;     // at most 4096; size x count at most 1 GiB
  std::string staging_location = "any";  // any, auto or cpu:N
  size_t staging_workers = 2;            // threads that run local GPU copies
  size_t staging_max_queued = 64;        // copies waiting or running; more are refused
  // Remote staging (docs/remote-staging.md).
  bool remote_staging = false;           // peers may Pin this node's exposed device ranges
  uint32_t staging_pipeline_depth = 1;   // chunks in flight per session (1: serial; at most 16)
  size_t remote_staging_shards = 4;      // sessions this node runs at once as requester (at most 8)
  std::string staging_cross = "auto";    // auto: a CROSS is one UCX GET where both sides can; caf

  // -- logging -----------------------------------------------------------------
  std::string log_level = "info";
  std::string log_format = "text"; // or json: one object a line

  // -- test hooks (honoured only in FERRY_TEST_HOOKS builds) -------------------
  uint64_t test_stall_pulls_from = std::numeric_limits<uint64_t>::max();
  std::string test_descriptor_fault; // unknown_backend, truncated, trailing_byte, lying_key_length
  bool test_fail_gets = false;
  uint64_t test_get_delay_ms = 0;
  bool test_stall_ucx = false; // the UCX engine never progresses for peers' GETs
  bool test_drop_control_frames = false; // the engine drops every control frame that arrives
  uint64_t test_fail_control_sends_after = 0; // then every control frame's send fails (0: never)
  uint64_t test_serve_delay_ms = 0; // ... only this long after each new descriptor
  bool test_fake_cuda = false; // staging runs on the fake CUDA (real mapped bytes)

  std::chrono::milliseconds request_timeout() const {
    return std::chrono::milliseconds{request_timeout_ms};
  }
  std::chrono::milliseconds transfer_timeout() const {
    return std::chrono::milliseconds{transfer_timeout_ms};
  }
  std::chrono::milliseconds effective_lease_timeout() const {
    return std::chrono::milliseconds{lease_timeout_ms < 1 ? 1 : lease_timeout_ms};
  }
  bool tls() const { return !tls_ca.empty() || !tls_cert.empty() || !tls_key.empty(); }
  std::string advertised_host() const {
    return advertise_host.empty() ? bind_host : advertise_host;
  }

  ferry::owner_config owner_config() const;
  ferry::consumer_config consumer_config() const;
  ferry::messenger_config messenger_config() const;

  /// scheduler_threads, or by default half the hardware threads, 1 to 4.
  /// A node has more busy threads than its scheduler's (the middleman's
  /// multiplexer, CAF's clock, the UCX engine, the arena pool), and every
  /// hop between actors wakes one of them. On 2 vCPUs, 2 scheduler threads
  /// made a warm 4 KiB get ~25% slower than 1 (docs/performance.md).
  size_t effective_scheduler_threads() const;
};

} // namespace ferry
