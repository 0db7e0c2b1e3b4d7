// The ucx role: registers one region (UCX-allocated or plain pages), fills
// it with the payload pattern, offers "ready <worker address> <addr> <len>
// <rkey> <transports>" and then progresses its worker in a busy loop (an
// emulated GET over tcp or plain shared memory needs the target to
// progress), glancing at stdin every few hundred iterations for "quit".
// With --am-echo it also answers each active-message ping with a pong of
// the same bytes (bench/ucx_am_echo.hpp), between progress calls.
#include <cstdio>
#include <cstring>

#include <poll.h>
#include <unistd.h>

#include "bench/payload.hpp"
#include "bench/peer_roles.hpp"

#ifdef FERRY_BENCH_WITH_UCX
#include "bench/bench_buffer.hpp"
#include "bench/hex_text.hpp"
#include "bench/ucx_am_echo.hpp"
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

// Answers the ping in `inbox`, if one came, with a pong of the same bytes
// to its sender; an earlier pong is finished first. Problems go to stderr
// (stdout is the control channel): the bench then times out and shows them.
class am_echo {
public:
  explicit am_echo(ucx_worker& worker) : worker_(worker) {}

  std::string listen() { return listen_am(worker_.native(), am_ping_id, &inbox_); }

  void answer() {
    if (!inbox_.error.empty()) {
      std::fprintf(stderr, "bench-peer: %s\n", inbox_.error.c_str());
      inbox_.error.clear();
    }
    if (!inbox_.arrived)
      return;
    inbox_.arrived = false;
    while (!am_sent(pong_))
      worker_.progress();
    if (inbox_.reply_ep == nullptr) {
      std::fprintf(stderr, "bench-peer: a ping without a reply endpoint\n");
      return;
    }
    std::memcpy(reply_, inbox_.bytes, inbox_.length);
    pong_ = post_am(inbox_.reply_ep, am_pong_id, reply_, inbox_.length, false);
    if (!pong_.error.empty())
      std::fprintf(stderr, "bench-peer: %s\n", pong_.error.c_str());
  }

private:
  ucx_worker& worker_;
  am_inbox inbox_;
  char reply_[am_max_message];
  am_send pong_;
};

} // namespace

int run_ucx_peer(const peer_options& opts) {
  ucx_context_config config;
  config.active_messages = opts.am_echo;
  auto ctx = ucx_context::create(config);
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
  am_echo echo(*worker);
  if (opts.am_echo)
    if (auto err = echo.listen(); !err.empty()) {
      peer_say("error " + err);
      return 1;
    }
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
    for (int i = 0; i < 256; ++i) {
      worker->progress();
      echo.answer();
    }
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
