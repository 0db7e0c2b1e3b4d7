#include "runtime/node_options.hpp"

#include <CLI/CLI.hpp>

namespace ferry {

void add_client_options(CLI::App& app, node_config& cfg) {
  app.add_option("--request-timeout-ms", cfg.request_timeout_ms,
                 "Bound on every cross-node request")
    ->capture_default_str();
  app.add_option("--transfer-timeout-ms", cfg.transfer_timeout_ms,
                 "Bound on one whole transfer (a GET, a get, an adopt)")
    ->capture_default_str();
  app.add_option("--pull-window", cfg.pull_window,
                 "Chunk pulls in flight per transfer")
    ->capture_default_str();
  app.add_option("--eager-max", cfg.eager_max,
                 "A payload of at most this many bytes comes inside the answer to "
                 "its acquire, in one round trip instead of two (the smaller of "
                 "both sides' values counts; 0: never)")
    ->capture_default_str();
  app.add_option("--staged-payload-max", cfg.staged_payload_max,
                 "Largest payload taken from a peer (0: no limit)")
    ->capture_default_str();
  app.add_option("--staging-threshold", cfg.staging_threshold,
                 "Messenger payloads above this many bytes go by handle")
    ->capture_default_str();
  app.add_option("--staged-fetch-timeout-ms", cfg.staged_fetch_timeout_ms,
                 "The longest this node fetches a staged messenger payload "
                 "(a call's timeout may end it sooner; stream items are exempt)")
    ->capture_default_str();
  app.add_option("--warm-buffer-bytes", cfg.warm_buffer_bytes,
                 "Large payload buffers (handlers' and results given back) kept warm "
                 "for the next fetched payload or get result (0: none)")
    ->capture_default_str();
  app.add_option("--register-in-place-min", cfg.register_in_place_min,
                 "Messenger payloads staged by handle with at least this many bytes "
                 "are registered where they lie, not copied into an arena (shared "
                 "memory and tcp only; 0: always copied)")
    ->capture_default_str();
  app.add_option("--log-level", cfg.log_level,
                 "trace, debug, info, warn, error or off")
    ->capture_default_str();
  app.add_option("--log-format", cfg.log_format,
                 "text, or json (one object a line, for log collectors)")
    ->check(CLI::IsMember({"text", "json"}))
    ->capture_default_str();
  app.add_option("--tls-ca", cfg.tls_ca,
                 "PEM file of the CA peers' certificates must be signed by "
                 "(mutual TLS; needs --tls-cert and --tls-key)")
    ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", cfg.tls_cert, "PEM file of this process's certificate")
    ->check(CLI::ExistingFile);
  app.add_option("--tls-key", cfg.tls_key, "PEM file of its private key")
    ->check(CLI::ExistingFile);
  app.add_option("--scheduler-threads", cfg.scheduler_threads,
                 "CAF scheduler threads (0: half the cores, 1 to 4)")
    ->capture_default_str();
  app.add_option("--ucx", cfg.ucx, "Add the UCX transport (the RDMA path, the control channel)")
    ->capture_default_str();
  app.add_option("--control-channel", cfg.control_channel,
                 "Rendezvous calls to peers: auto (UCX active messages where both "
                 "nodes serve them, else CAF requests; CAF requests with --tls-*), "
                 "ucx_am (as auto, with --tls-* too) or caf (CAF requests); "
                 "FERRY_CONTROL_CHANNEL overrides")
    ->check(CLI::IsMember({"auto", "ucx_am", "caf"}))
    ->capture_default_str();
  app.add_option("--registered-bytes-budget", cfg.registered_bytes_budget,
                 "Cap on registered bytes (destination buffers of GETs)")
    ->capture_default_str();
  app.add_option("--test-get-delay-ms", cfg.test_get_delay_ms,
                 "Test hook: hold each GET completion this long")
    ->group("");
  app.add_flag("--test-fail-gets", cfg.test_fail_gets,
               "Test hook: every GET fails")
    ->group("");
  app.add_option("--test-stall-pulls-from", cfg.test_stall_pulls_from,
                 "Test hook: never answer pulls of this chunk index or later")
    ->group("");
}

void add_node_options(CLI::App& app, node_config& cfg) {
  app.add_option("--warm-buffer-prefill", cfg.warm_buffer_prefill,
                 "After a plain get of 4 MiB or more, prepare a warm buffer of its size "
                 "on a background thread for the next get's result (within "
                 "--warm-buffer-bytes)")
    ->capture_default_str();
  app.add_option("--warm-buffer-idle-ms", cfg.warm_buffer_idle_ms,
                 "A warm buffer nobody took for this long is let go and its memory "
                 "handed back (0: kept until the node stops)")
    ->capture_default_str();
  add_client_options(app, cfg);
  app.add_option("--port", cfg.port, "Gateway port (0: any free port)")
    ->capture_default_str();
  app.add_option("--bind", cfg.bind_host, "Address the gateway listens on")
    ->capture_default_str();
  app.add_option("--advertise", cfg.advertise_host,
                 "Host name peers are told (default: --bind)");
  app.add_option("--metrics-port", cfg.metrics_port,
                 "Prometheus HTTP port (-1: off, 0: any free port)")
    ->capture_default_str();
  app.add_option("--join", cfg.join,
                 "HOST:PORT of a cluster member to join by (repeatable; retried "
                 "until reached; every member learns of this node)");
  app.add_option("--scheduler-policy", cfg.scheduler_policy,
                 "CAF scheduler policy: sharing or stealing")
    ->capture_default_str();
  app.add_option("--heartbeat-interval-ms", cfg.heartbeat_interval_ms)
    ->capture_default_str();
  app.add_option("--connection-timeout-ms", cfg.connection_timeout_ms)
    ->capture_default_str();
  app.add_option("--chunk-size", cfg.chunk_size, "Chunk size of the chunked path")
    ->capture_default_str();
  app.add_option("--lease-sweep-ms", cfg.lease_sweep_ms,
                 "Sweep period of chunked lease deadlines and TTLs")
    ->capture_default_str();
  app.add_option("--rdma-enabled", cfg.rdma_enabled,
                 "The RDMA path (FERRY_RDMA_RENDEZVOUS_DISABLE overrides)")
    ->capture_default_str();
  app.add_option("--rdma-emulated-gets", cfg.rdma_emulated_gets,
                 "The RDMA path also with peers whose GETs UCX emulates over tcp "
                 "(the two nodes share no memory and do not both have a one-sided "
                 "NIC); takes effect where both nodes allow it. Slower than chunks "
                 "there, and UCX 1.13 can abort an owner whose reader dies mid-GET "
                 "(FERRY_RDMA_EMULATED_GETS=1, true, yes or on turns it on)")
    ->capture_default_str();
  app.add_option("--rdma-min-bytes", cfg.rdma_min_bytes)->capture_default_str();
  app.add_option("--lease-timeout-ms", cfg.lease_timeout_ms,
                 "Deadline of a lease while its transfer runs (at least 1 ms)")
    ->capture_default_str();
  app.add_option("--rdma-quarantine-max-ms", cfg.rdma_quarantine_max_ms,
                 "Longest a freed block that a peer's given-up GET may still read "
                 "waits for that peer's fence; then the endpoints to it close and "
                 "the block goes (at least 1 ms)")
    ->capture_default_str();
  app.add_option("--initial-arena-bytes", cfg.initial_arena_bytes)
    ->capture_default_str();
  app.add_option("--max-arena-bytes", cfg.max_arena_bytes)->capture_default_str();
  app.add_option("--dedicated-arena-min", cfg.dedicated_arena_min)
    ->capture_default_str();
  app.add_option("--arena-reclaim-after-ms", cfg.arena_reclaim_after_ms,
                 "Unmap empty pooled arenas after this long (0: never)")
    ->capture_default_str();
  app.add_option("--map-arena-at-start", cfg.map_arena_at_start,
                 "Map the first arena at start, so messenger payloads staged here "
                 "can take the RDMA path (a send never maps one)")
    ->capture_default_str();
  app.add_option("--retain-arena-bytes", cfg.retain_arena_bytes)
    ->capture_default_str();
  app.add_option("--shutdown-timeout-ms", cfg.shutdown_timeout_ms,
                 "One deadline for the whole stop: drain, unmap, control plane")
    ->capture_default_str();
  app.add_option("--ep-idle-timeout-ms", cfg.ep_idle_timeout_ms,
                 "Close UCX endpoints unused this long, after a goodbye to the "
                 "peer (0: never; at least 500)")
    ->capture_default_str();
  app.add_option("--eager-endpoints", cfg.eager_endpoints,
                 "Wire up a peer's UCX endpoint at its hello, not at its first GET")
    ->capture_default_str();
  app.add_option("--drop-dereg-timeout-ms", cfg.drop_dereg_timeout_ms)
    ->capture_default_str();
  app.add_option("--staging-chunk-size", cfg.staging_chunk_size,
                 "Bytes of one pinned staging chunk for local GPU copies (at most 64 MiB)")
    ->capture_default_str();
  app.add_option("--staging-chunk-count", cfg.staging_chunk_count,
                 "Pinned staging chunks at most (4096; size x count at most 1 GiB)")
    ->capture_default_str();
  app.add_option("--staging-location", cfg.staging_location,
                 "Where staging chunks live: any, auto (the GPU's NUMA node) or cpu:N")
    ->capture_default_str();
  app.add_option("--staging-workers", cfg.staging_workers,
                 "Threads that run local GPU copies")
    ->capture_default_str();
  app.add_option("--remote-staging", cfg.remote_staging,
                 "Let peers Pin this node's exposed device ranges (remote staging's source)")
    ->capture_default_str();
  app.add_option("--staging-pipeline-depth", cfg.staging_pipeline_depth,
                 "Chunks in flight per remote staging session (1: serial; at most 16 and "
                 "the chunk count; a session runs the smaller of both sides')")
    ->capture_default_str();
  app.add_option("--remote-staging-shards", cfg.remote_staging_shards,
                 "Remote staging sessions this node runs at once as requester (1 to 8; "
                 "at most 64 wait or run)")
    ->capture_default_str();
  app.add_option("--staging-cross", cfg.staging_cross,
                 "How a remote staging chunk crosses: auto (one UCX GET of the other "
                 "side's slot when both nodes have UCX) or caf (CAF requests, 512 KiB pieces)")
    ->check(CLI::IsMember({"auto", "caf"}))
    ->capture_default_str();
  app.add_flag("--test-fake-cuda", cfg.test_fake_cuda,
               "Test hook: stage through the fake CUDA (host memory as device memory)")
    ->group("");
  app.add_option("--test-descriptor-fault", cfg.test_descriptor_fault,
                 "Test hook: corrupt each RDMA descriptor")
    ->group("");
  app.add_flag("--test-stall-ucx", cfg.test_stall_ucx,
               "Test hook: never progress UCX for peers' GETs (they hang)")
    ->group("");
  app.add_flag("--test-drop-control-frames", cfg.test_drop_control_frames,
               "Test hook: drop every control-channel frame that arrives (UCX's port closed)")
    ->group("");
  app.add_option("--test-fail-control-sends-after", cfg.test_fail_control_sends_after,
                 "Test hook: after this many control-channel frames, every send fails")
    ->group("");
  app.add_option("--test-serve-delay-ms", cfg.test_serve_delay_ms,
                 "Test hook: serve peers' GETs only this long after each new descriptor")
    ->group("");
}

} // namespace ferry
