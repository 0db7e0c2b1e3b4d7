// scenarios: the runners behind the rows of the scenario table, one family
// per source file (scenario_*.cpp). Declared here so the table
// (scenario_table.cpp) is the only place that names and orders them.
#pragma once

#include <memory>

#include "bench/bench_options.hpp"
#include "bench/scenario.hpp"
#include "bench/transport_env.hpp"

namespace ferry::staging {
class cuda_api;
} // namespace ferry::staging

namespace ferry::bench {

/// memcpy between two warm buffers in this process.
std::unique_ptr<scenario_runner> make_memcpy_runner(const bench_options& opts);

/// A plain TCP stream from a peer process on 127.0.0.1.
std::unique_ptr<scenario_runner> make_tcp_runner(const bench_options& opts);

/// A bare ucp_get_nbx loop against a peer's registered region, over shared
/// memory (UCX_TLS=sm,self, UCX-allocated region when UCX offers it) or tcp.
/// Null when this ferry has no UCX.
std::unique_ptr<scenario_runner> make_ucx_raw_runner(const bench_options& opts,
                                                     bool shared_memory);
bool ucx_built();

/// UCX's own active-message round trip with a peer process on `transport`
/// (a tiny ping and its pong, both sides busy-polling): the floor under a
/// control message over UCX. Null when this ferry has no UCX.
std::unique_ptr<scenario_runner> make_ucx_am_rtt_runner(const bench_options& opts,
                                                        ucx_transport transport);

/// The payload as one CAF reply message between two actor systems.
std::unique_ptr<scenario_runner> make_caf_inline_runner(const bench_options& opts);

/// A tiny CAF request and its reply between two actor systems.
std::unique_ptr<scenario_runner> make_caf_rtt_runner(const bench_options& opts);

/// The same request to an actor of this process's actor system.
std::unique_ptr<scenario_runner> make_caf_local_rtt_runner(const bench_options& opts);

/// A hand-off to a partner thread and back in this process: through a
/// condition variable (the partner sleeps) or through one atomic word (both
/// spin). The floor under each hop between threads a get makes.
std::unique_ptr<scenario_runner> make_thread_wake_runner(const bench_options& opts);
std::unique_ptr<scenario_runner> make_thread_spin_runner(const bench_options& opts);

enum class chunked_mode {
  warm, // blocking_client::get on a connected pair (the get allocates)
  cold, // the first get on a freshly started and connected consumer node
  into, // blocking_client::get_into a warm caller buffer
};

/// A ferry get over the chunked path from an owner node in a peer process.
std::unique_ptr<scenario_runner> make_ferry_chunked_runner(const bench_options& opts,
                                                           chunked_mode mode);

/// `consumers` threads, each with its own ferry::node in this process,
/// pulling the same handle from one owner at once.
std::unique_ptr<scenario_runner>
make_ferry_concurrent_runner(const bench_options& opts, int consumers);

enum class rdma_mode {
  warm,        // blocking_client::get on a connected pair, the result dropped
  given_back,  // the same, each result given back (untimed) for the next to land in
  cold,        // the first get on a freshly started and connected consumer node
  cold_eager,  // the same with eager wireup on both nodes (done before the clock)
  into_pinned, // get_into a pinned writer allocated once per size
  defaults,    // as warm with the nodes' defaults: a tcp pair takes no emulated
               // GET, so its gets go by chunks (checked as such)
};

/// A ferry get over the RDMA path (payload staged pinned, both nodes on
/// `transport`) from an owner node in a peer process; every run also checks
/// that the RDMA path ran.
std::unique_ptr<scenario_runner> make_ferry_rdma_runner(const bench_options& opts,
                                                        ucx_transport transport,
                                                        rdma_mode mode);

/// As make_ferry_concurrent_runner, over the RDMA path on `transport`.
std::unique_ptr<scenario_runner>
make_ferry_rdma_concurrent_runner(const bench_options& opts, int consumers,
                                  ucx_transport transport);

/// 64 consumers (threads over 8 nodes) getting fanin_handles handles from
/// one owner, each get timed (p50, p99), the owner's store and memory checked.
std::unique_ptr<scenario_runner> make_fanin_runner(const bench_options& opts);
/// The same over the RDMA path on `transport`.
std::unique_ptr<scenario_runner> make_fanin_rdma_runner(const bench_options& opts,
                                                        ucx_transport transport);

/// A unary messenger call to the peer's ferry.checksum with the payload:
/// staged by handle above the threshold (RDMA over shared memory), or
/// inline at every size.
std::unique_ptr<scenario_runner> make_messenger_runner(const bench_options& opts,
                                                       bool staged);

/// A local GPU copy on device 0 through the real driver: direct
/// (chunk_bytes 0: one copy between device and registered host memory) or
/// staged through one pinned chunk of chunk_bytes (local_stager). `api`:
/// another backend (the bench test's fake); null: the driver.
std::unique_ptr<scenario_runner> make_cuda_runner(const bench_options& opts, bool to_host,
                                                  uint64_t chunk_bytes,
                                                  std::shared_ptr<staging::cuda_api> api = {});
/// Why the cuda rows cannot run here (empty: they can).
std::string cuda_unavailable_reason();

} // namespace ferry::bench
