// The ucx role: registers one region (UCX-allocated or plain pages), fills
// it with the payload pattern, offers "ready <worker address> <addr> <len>
// <rkey> <transports>" and then progresses its worker in a busy loop (an
// emulated GET over tcp or plain shared memory needs the target to
// progress), glancing at stdin every few hundred iterations for "quit".
#include <poll.h>
#include <unistd.h>

#include "bench/payload.hpp"
#include "bench/peer_roles.hpp"

#ifdef FERRY_BENCH_WITH_UCX
#include "bench/bench_buffer.hpp"
#include "bench/hex_text.hpp"
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_memory.hpp"
#include "rdma/ucx_worker.hpp"
#endif

namespace ferry::bench {

#ifdef FERRY_BENCH_WITH_UCX

namespace {

// True when stdin has a line (or EOF) waiting.
bool stdin_ready() {
  pollfd pfd{0, POLLIN, 0};
  return ::poll(&pfd, 1, 0) > 0;
}

} // namespace

int run_ucx_peer(const peer_options& opts) {
  auto ctx = ucx_context::create();
  if (!ctx) {
    peer_say("error " + ctx.error_message());
    return 1;
  }
  auto worker = ucx_worker::create(*ctx);
  if (!worker) {
    peer_say("error " + worker.error_message());
    return 1;
  }
  // UCX-allocated pages only where shared memory can hand them over (then
  // a same-host GET is a one-sided memcpy); elsewhere plain pages.
  // Plain pages come from a bench_buffer (huge pages, touched once), so
  // filling them does not pay a fault per 4 KiB page.
  bool allocate = opts.ucx_allocate && ctx->prefers_ucx_allocation();
  bench_buffer plain;
  if (!allocate)
    plain = bench_buffer{opts.region_bytes};
  auto mem = allocate ? ucx_memory::map(*ctx, opts.region_bytes, true)
                      : ucx_memory::map_existing(*ctx, plain.data(), plain.size());
  if (!mem) {
    peer_say("error " + mem.error_message());
    return 1;
  }
  fill_payload(static_cast<char*>(mem->data()), mem->size());
  const auto& addr = worker->address();
  auto transports = ctx->describe_transports();
  for (auto& c : transports)
    if (c == ' ')
      c = ',';
  peer_say("ready " + to_hex(addr.data(), addr.size()) + " "
           + std::to_string(mem->address()) + " " + std::to_string(mem->size())
           + " " + to_hex(mem->rkey().data(), mem->rkey().size()) + " "
           + (transports.empty() ? "-" : transports));
  for (;;) {
    for (int i = 0; i < 256; ++i)
      worker->progress();
    if (stdin_ready()) {
      std::string line;
      if (!peer_hear(&line) || line == "quit")
        break;
    }
  }
  return 0;
}

#else

int run_ucx_peer(const peer_options&) {
  peer_say("error this ferry was built without UCX");
  return 1;
}

#endif

} // namespace ferry::bench
