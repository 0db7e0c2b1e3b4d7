// ferry_messenger_staged, ferry_messenger_inline: a unary messenger call to
// the owner peer's ferry.checksum handler with the payload, and its small
// reply (the payload's size and checksum, which the run verifies).
//   staged: the messenger's default staging threshold, so a payload above
//           256 KiB goes by handle: staged here (from 1 MiB registered where
//           it lies, below that copied into an arena mapped at start: a send
//           never maps one), fetched by the peer over the RDMA path (shared
//           memory) into a warm buffer, released after the fetch
//   inline: a threshold above every size, so the payload rides in the call
//           message itself, as CAF serializes it
// The payload is copied for each run outside the clock (a call takes its
// payload); the staged row checks each run above the threshold was staged.
#include <chrono>
#include <memory>
#include <optional>

#include "bench/owner_peer.hpp"
#include "bench/payload.hpp"
#include "bench/scenarios.hpp"
#include "bench/transport_env.hpp"
#include "protocol/checksum.hpp"
#include "protocol/errors.hpp"
#include "protocol/messenger_wire.hpp"
#include "protocol/staging_headers.hpp"
#include "runtime/builtin_handlers.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"

#include <prometheus/registry.h>

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double staged_count(node& n) {
  for (auto& family : n.metrics_registry().Collect())
    if (family.name == "ferry_messenger_staged_payloads_total" && !family.metric.empty())
      return family.metric.front().counter.value;
  return 0;
}

class messenger_runner : public scenario_runner {
public:
  messenger_runner(const bench_options& opts, bool staged)
    : knobs_(opts.knobs), staged_(staged) {}

  std::string start() override {
    env_.emplace(ucx_transport::sm);
    if (auto err = owner_.start(knobs_, true, ucx_peer_env(ucx_transport::sm));
        !err.empty())
      return err;
    auto cfg = consumer_node_config(knobs_, true);
    if (staged_) {
      // One pooled arena, mapped at start, that every size fits in.
      cfg.map_arena_at_start = true;
      cfg.initial_arena_bytes = 512 * MiB;
      cfg.max_arena_bytes = 512 * MiB;
      cfg.dedicated_arena_min = 1024 * MiB;
      cfg.registered_bytes_budget = 2048 * MiB;
    } else {
      cfg.staging_threshold = messenger::envelope_limits::max_inline_payload;
    }
    node_ = std::make_unique<node>(cfg);
    if (auto err = node_->start())
      return describe(err);
    auto hello = node_->connect(owner_.endpoint());
    if (!hello)
      return describe(hello.error());
    peer_ = hello->worker_id;
    client_ = std::make_unique<messenger_client>(*node_);
    return {};
  }

  std::string prepare(uint64_t bytes) override {
    payload_ = make_payload_vector(bytes);
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    auto copy = payload_; // the call takes its payload; untimed
    auto before = staged_count(*node_);
    auto t0 = clock_type::now();
    auto reply = client_->call(peer_, checksum_handler, std::move(copy), {},
                               std::chrono::seconds{120});
    auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (!reply)
      return run_outcome::failed(describe(reply.error()));
    auto hex = checksum_text(expected_checksum(bytes));
    if (reply->hdrs["checksum"] != hex || reply->hdrs["bytes"] != std::to_string(bytes))
      return run_outcome::failed("the handler saw other bytes: " + reply->hdrs["bytes"]
                                 + " bytes, checksum " + reply->hdrs["checksum"]);
    auto went_by_handle = staged_count(*node_) > before;
    if (went_by_handle != (staged_ && messenger::stages(bytes)))
      return run_outcome::failed(went_by_handle ? "the payload was staged"
                                                : "the payload was not staged");
    return run_outcome::took(secs);
  }

  void finish(uint64_t) override { payload_.clear(); }

  void stop() override {
    client_.reset();
    node_.reset();
    owner_.stop();
    env_.reset();
  }

private:
  ferry_knobs knobs_;
  bool staged_;
  std::optional<scoped_transport_env> env_;
  owner_peer owner_;
  std::unique_ptr<node> node_;
  std::unique_ptr<messenger_client> client_;
  uint64_t peer_ = 0;
  std::vector<char> payload_;
};

} // namespace

std::unique_ptr<scenario_runner> make_messenger_runner(const bench_options& opts,
                                                       bool staged) {
  return std::make_unique<messenger_runner>(opts, staged);
}

} // namespace ferry::bench
