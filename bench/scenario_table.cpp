#include "bench/scenario_table.hpp"

#include "bench/scenarios.hpp"

namespace ferry::bench {

namespace {

// Factories that ignore the consumer count.
runner_factory single(std::unique_ptr<scenario_runner> (*make)(const bench_options&)) {
  return [make](const bench_options& o, int) { return make(o); };
}

runner_factory chunked(chunked_mode mode) {
  return [mode](const bench_options& o, int) {
    return make_ferry_chunked_runner(o, mode);
  };
}

runner_factory ucx_raw(bool sm) {
  if (!ucx_built())
    return {};
  return [sm](const bench_options& o, int) { return make_ucx_raw_runner(o, sm); };
}

runner_factory ucx_am_rtt(ucx_transport t) {
  if (!ucx_built())
    return {};
  return [t](const bench_options& o, int) { return make_ucx_am_rtt_runner(o, t); };
}

// The RDMA rows: empty factories (skipped) in a ferry built without UCX.
runner_factory rdma(ucx_transport t, rdma_mode mode) {
  if (!ucx_built())
    return {};
  return [t, mode](const bench_options& o, int) {
    return make_ferry_rdma_runner(o, t, mode);
  };
}

// The messenger rows run over shared memory (the staged row's RDMA path).
runner_factory messenger(bool staged) {
  if (!ucx_built())
    return {};
  return [staged](const bench_options& o, int) { return make_messenger_runner(o, staged); };
}

// The CUDA rows: empty factories (skipped) without a driver and a GPU.
runner_factory cuda(bool to_host, uint64_t chunk_bytes) {
  static const std::string why = cuda_unavailable_reason();
  if (!why.empty())
    return {};
  return [to_host, chunk_bytes](const bench_options& o, int) {
    return make_cuda_runner(o, to_host, chunk_bytes);
  };
}

runner_factory fanin_rdma(ucx_transport t) {
  if (!ucx_built())
    return {};
  return [t](const bench_options& o, int) { return make_fanin_rdma_runner(o, t); };
}

runner_factory rdma_concurrent(ucx_transport t) {
  if (!ucx_built())
    return {};
  return [t](const bench_options& o, int n) {
    return make_ferry_rdma_concurrent_runner(o, n, t);
  };
}

scenario_entry row(std::string name, std::string what, std::string limit,
                   runner_factory make, std::string needs = {}) {
  scenario_entry e;
  e.name = std::move(name);
  e.what = std::move(what);
  e.limit = std::move(limit);
  e.make = std::move(make);
  e.needs = std::move(needs);
  return e;
}

scenario_entry with(scenario_entry e, size_kind sizes, repeat_kind repeats,
                    bool per_consumer_count = false) {
  e.sizes = sizes;
  e.repeats = repeats;
  e.per_consumer_count = per_consumer_count;
  return e;
}

scenario_entry fixed_consumers(scenario_entry e, int consumers) {
  e.consumers = consumers;
  return e;
}

std::vector<scenario_entry> build() {
  const char* no_ucx = "UCX (this ferry was built without it)";
  return {
    // -- limits -----------------------------------------------------------
    row("memcpy", "memcpy between two warm buffers, one process",
        "memory bandwidth: the limit of any shared-memory path",
        single(make_memcpy_runner)),
    row("tcp_loopback", "a plain TCP stream from a peer process into a warm buffer",
        "kernel socket copies on lo: the limit of the chunked path",
        single(make_tcp_runner)),
    row("ucx_get_raw_sm", "bare ucp_get_nbx, UCX_TLS=sm,self, UCX-allocated region",
        "one-sided memcpy from the peer's pages: the limit of ferry_rdma_sm",
        ucx_raw(true), no_ucx),
    row("ucx_get_raw_tcp", "bare ucp_get_nbx, UCX_TLS=tcp on lo, plain pages",
        "emulated GET over tcp, served by the peer's progress: the limit of "
        "ferry_rdma_tcp",
        ucx_raw(false), no_ucx),
    with(row("ucx_am_rtt_sm", "an 8-byte UCX active message and its echo, sm,self",
             "UCX's own round trip over shared memory: the floor under a control "
             "message over UCX",
             ucx_am_rtt(ucx_transport::sm), no_ucx),
         size_kind::tiny, repeat_kind::rtt),
    with(row("ucx_am_rtt_tcp", "an 8-byte UCX active message and its echo, tcp on lo",
             "UCX's own round trip over tcp: the floor under a control message "
             "over UCX",
             ucx_am_rtt(ucx_transport::tcp), no_ucx),
         size_kind::tiny, repeat_kind::rtt),
    with(row("thread_wake_rtt",
             "a token to a thread asleep on a condition variable and back, one process",
             "two wake-ups of a sleeping thread: what each hop between threads of a "
             "get costs when the thread it goes to waits asleep",
             single(make_thread_wake_runner)),
         size_kind::tiny, repeat_kind::rtt),
    with(row("thread_spin_rtt",
             "a token to a busy-polling thread through one atomic word and back, one "
             "process",
             "a hop between threads when both spin (each holds a core)",
             single(make_thread_spin_runner)),
         size_kind::tiny, repeat_kind::rtt),
    // -- the CAF baseline -------------------------------------------------
    row("caf_inline", "the payload as one CAF reply message between two processes",
        "CAF serialization and one BASP message: what the chunked path replaces",
        single(make_caf_inline_runner)),
    with(row("caf_request_rtt", "an 8-byte CAF request and reply between two processes",
             "CAF scheduling + middleman: the floor under every control message",
             single(make_caf_rtt_runner)),
         size_kind::tiny, repeat_kind::rtt),
    with(row("caf_local_rtt",
             "an 8-byte CAF request from a scoped actor to an actor of the same "
             "system, set up like a node's, and its reply",
             "one hop to a CAF worker and one back: what the blocking client pays "
             "its node on every call",
             single(make_caf_local_rtt_runner)),
         size_kind::tiny, repeat_kind::rtt),
    // -- ferry: chunked path ----------------------------------------------
    row("ferry_chunked", "blocking_client::get over the chunked path (warm pair)",
        "chunk round trips over CAF + allocating the result",
        chunked(chunked_mode::warm)),
    with(row("ferry_chunked_cold", "the first get on a freshly connected consumer node",
             "as ferry_chunked, plus lookup and first-use costs",
             chunked(chunked_mode::cold)),
         size_kind::all, repeat_kind::cold),
    row("ferry_chunked_into", "blocking_client::get_into a warm caller buffer",
        "chunk round trips over CAF, no allocation of the result",
        chunked(chunked_mode::into)),
    // -- ferry: RDMA path ------------------------------------------------
    row("ferry_rdma_sm", "get over the RDMA path, shared memory (warm pair)",
        "ucx_get_raw_sm + the acquire round trip + faulting in the fresh result "
        "(the GET lands in it)",
        rdma(ucx_transport::sm, rdma_mode::warm), no_ucx),
    row("ferry_rdma_sm_given_back",
        "as ferry_rdma_sm, each result given back (untimed) for the next to land in",
        "ucx_get_raw_sm + the acquire round trip (warm memory: no fill, no fresh pages)",
        rdma(ucx_transport::sm, rdma_mode::given_back), no_ucx),
    with(row("ferry_rdma_sm_cold", "the first RDMA get on a fresh pair, shared memory",
             "as ferry_rdma_sm, plus lookup and UCX wire-up of a fresh endpoint",
             rdma(ucx_transport::sm, rdma_mode::cold), no_ucx),
         size_kind::all, repeat_kind::cold),
    with(row("ferry_rdma_sm_cold_eager",
             "the first RDMA get on a fresh pair, shared memory, eager wireup",
             "as ferry_rdma_sm_cold, with the endpoint wired up at the hello",
             rdma(ucx_transport::sm, rdma_mode::cold_eager), no_ucx),
         size_kind::all, repeat_kind::cold),
    row("ferry_rdma_tcp",
        "get over the RDMA path, UCX over tcp on lo (warm pair; emulated GETs "
        "allowed: by default a tcp pair takes ferry_chunked's way)",
        "ucx_get_raw_tcp + the acquire round trip + faulting in the fresh result "
        "(the GET lands in it)",
        rdma(ucx_transport::tcp, rdma_mode::warm), no_ucx),
    row("ferry_rdma_tcp_given_back",
        "as ferry_rdma_tcp, each result given back (untimed) for the next to land in",
        "ucx_get_raw_tcp + the acquire round trip (warm memory: no fill, no fresh pages)",
        rdma(ucx_transport::tcp, rdma_mode::given_back), no_ucx),
    with(row("ferry_rdma_tcp_cold", "the first RDMA get on a fresh pair, UCX over tcp",
             "as ferry_rdma_tcp, plus lookup and UCX wire-up of a fresh endpoint",
             rdma(ucx_transport::tcp, rdma_mode::cold), no_ucx),
         size_kind::all, repeat_kind::cold),
    with(row("ferry_rdma_tcp_cold_eager",
             "the first RDMA get on a fresh pair, UCX over tcp, eager wireup",
             "as ferry_rdma_tcp_cold, with the endpoint wired up at the hello",
             rdma(ucx_transport::tcp, rdma_mode::cold_eager), no_ucx),
         size_kind::all, repeat_kind::cold),
    row("ferry_pinned_tcp",
        "get of a pinned slot, UCX over tcp on lo, the nodes' defaults: no "
        "emulated GET, so chunks over the control channel (warm pair)",
        "tcp_loopback (the chunked path's messages over UCX on tcp)",
        rdma(ucx_transport::tcp, rdma_mode::defaults), no_ucx),
    row("ferry_get_into_pinned_sm",
        "get_into a pinned writer (allocated once, untimed), shared memory",
        "ucx_get_raw_sm + the acquire round trip", rdma(ucx_transport::sm,
                                                       rdma_mode::into_pinned),
        no_ucx),
    // -- ferry: messenger ------------------------------------------------------
    row("ferry_messenger_staged",
        "a unary call to ferry.checksum; above 256 KiB the payload goes by handle",
        "registering the payload in place + an emulated GET (the peer's worker "
        "serves it) into a warm buffer + the handler's checksum + the control "
        "messages",
        messenger(true), no_ucx),
    row("ferry_messenger_inline", "the same call with the payload inline at every size",
        "caf_inline (one CAF message carries the payload)", messenger(false), no_ucx),
    // -- CUDA staging (local copies, device 0) -----------------------------------
    row("cuda_direct_d2h", "one async copy, device to registered host memory",
        "PCIe/NVLink to pinned host memory: the limit of the staged rows",
        cuda(true, 0), "a CUDA driver and a GPU"),
    row("cuda_direct_h2d", "one async copy, registered host memory to the device",
        "PCIe/NVLink from pinned host memory", cuda(false, 0), "a CUDA driver and a GPU"),
    row("cuda_staged_d2h_1M", "device to plain host memory through a 1 MiB staging chunk",
        "the slower of the device copy and the host memcpy of each half",
        cuda(true, 1 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_d2h_4M", "the same through a 4 MiB chunk (the default)",
        "as cuda_staged_d2h_1M", cuda(true, 4 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_d2h_16M", "the same through a 16 MiB chunk", "as cuda_staged_d2h_1M",
        cuda(true, 16 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_d2h_64M", "the same through a 64 MiB chunk", "as cuda_staged_d2h_1M",
        cuda(true, 64 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_h2d_1M", "plain host memory to the device through a 1 MiB chunk",
        "the slower of the host memcpy and the device copy of each half",
        cuda(false, 1 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_h2d_4M", "the same through a 4 MiB chunk (the default)",
        "as cuda_staged_h2d_1M", cuda(false, 4 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_h2d_16M", "the same through a 16 MiB chunk", "as cuda_staged_h2d_1M",
        cuda(false, 16 * MiB), "a CUDA driver and a GPU"),
    row("cuda_staged_h2d_64M", "the same through a 64 MiB chunk", "as cuda_staged_h2d_1M",
        cuda(false, 64 * MiB), "a CUDA driver and a GPU"),
    // -- concurrency -------------------------------------------------------
    with(row("ferry_chunked_concurrent", "N consumer nodes pulling one handle at once",
             "the owner's one actor and the cores",
             [](const bench_options& o, int n) {
               return make_ferry_concurrent_runner(o, n);
             }),
         size_kind::concurrency, repeat_kind::normal, true),
    with(row("ferry_rdma_sm_concurrent",
             "N consumer nodes GETting one handle at once, shared memory",
             "memory bandwidth and the cores", rdma_concurrent(ucx_transport::sm),
             no_ucx),
         size_kind::concurrency, repeat_kind::normal, true),
    // -- fan-in: many consumers, many handles, one owner --------------------
    fixed_consumers(with(row("fanin_64_chunked",
                             "64 consumers getting thousands of handles from one owner, "
                             "each get timed (p50, p99)",
                             "the owner's one actor and the cores", single(make_fanin_runner)),
                         size_kind::fanin, repeat_kind::normal),
                    64),
    fixed_consumers(with(row("fanin_64_rdma_sm", "the same over the RDMA path, shared memory",
                             "the owner's one actor and the cores", fanin_rdma(ucx_transport::sm),
                             no_ucx),
                         size_kind::fanin, repeat_kind::normal),
                    64),
  };
}

} // namespace

const std::vector<scenario_entry>& scenario_table() {
  static const std::vector<scenario_entry> table = build();
  return table;
}

} // namespace ferry::bench
