// ferry_rdma_sm, ferry_rdma_tcp (+ _given_back, _cold, _cold_eager),
// ferry_get_into_pinned_sm: a ferry get over the RDMA path from an owner
// node in another process that staged the payload with register_data_pinned.
//   warm:        blocking_client::get on a connected pair; the GET lands in
//                the result (a fresh buffer, sized before the GET), which
//                is dropped after the run
//   given_back:  the same, but each run's result is given back
//                (blocking_client::give_back, untimed), so the next GET
//                lands in warm memory: what a caller that recycles its
//                results pays
//   cold:        the first get on a consumer node started and connected just
//                before (its UCX context, worker and endpoint are new; the
//                set-up is untimed, the get timed). Both nodes on CAF
//                requests: the control channel's probe would wire the
//                endpoint up at the hello, as --eager-endpoints does
//   cold_eager:  the same with --eager-endpoints on both nodes: the set-up
//                also waits (bounded) for the eager wireup to finish, so the
//                timed get shows what is left of the first-use cost
//   into_pinned: get_into a pinned writer allocated once per size, outside
//                the clock: the zero-copy destination
//   defaults:    as warm, but the nodes keep their defaults: over tcp alone
//                they take no GET UCX would emulate, so the get goes by
//                chunks (over the control channel), checked as chunked with
//                reason no_offer
// Both nodes run UCX on the row's transport (UCX_TLS in this process for
// the row's life, in the owner's environment at spawn; over tcp, emulated
// GETs allowed but for `defaults`), and the owner grants the RDMA path at
// every size. Every run checks the bytes and that the consumer counted one
// completed RDMA GET (path_check.hpp): a get that fell back to chunks fails
// the point.
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "bench/consumer_seat.hpp"
#include "bench/owner_peer.hpp"
#include "bench/path_check.hpp"
#include "bench/payload.hpp"
#include "bench/scenarios.hpp"
#include "bench/transport_env.hpp"
#include "protocol/errors.hpp"

namespace ferry::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

class ferry_rdma_runner : public scenario_runner {
public:
  ferry_rdma_runner(const bench_options& opts, ucx_transport transport,
                    rdma_mode mode)
    : knobs_(opts.knobs), transport_(transport), mode_(mode) {
    knobs_.eager_endpoints = mode == rdma_mode::cold_eager;
    knobs_.caf_control = mode == rdma_mode::cold;
  }

  std::string start() override {
    env_.emplace(transport_, !defaults());
    if (auto err = owner_.start(knobs_, true, ucx_peer_env(transport_, !defaults()));
        !err.empty())
      return err;
    if (!cold())
      return reseat(seat_, knobs_, owner_.endpoint(), true);
    return {};
  }

  std::string prepare(uint64_t bytes) override {
    std::string err;
    handle_ = owner_.stage(bytes, &err, true);
    if (!err.empty() || mode_ != rdma_mode::into_pinned)
      return err;
    auto w = seat_->client().alloc_pinned_writer(bytes);
    if (!w)
      return "alloc_pinned_writer: " + describe(w.error());
    writer_ = std::move(*w);
    return {};
  }

  run_outcome run(uint64_t bytes) override {
    if (cold()) {
      if (auto err = reseat(seat_, knobs_, owner_.endpoint(), true); !err.empty())
        return run_outcome::failed(err);
      if (mode_ == rdma_mode::cold_eager)
        if (auto err = await_eager_wireup(seat_->host()); !err.empty())
          return run_outcome::failed(err);
    }
    auto& c = seat_->client();
    auto before = read_paths(seat_->host());
    if (mode_ == rdma_mode::into_pinned) {
      std::memset(writer_->data(), 0, bytes);
      auto t0 = clock_type::now();
      auto got = c.get_into(handle_, writer_);
      auto secs = since(t0);
      if (!got)
        return run_outcome::failed(describe(got.error()));
      if (auto err = check_payload(writer_->data(), got->first, bytes); !err.empty())
        return run_outcome::failed(err);
      return finish_run(secs, got->second, before);
    }
    auto t0 = clock_type::now();
    auto got = c.get(handle_);
    auto secs = since(t0);
    if (!got)
      return run_outcome::failed(describe(got.error()));
    if (auto err = check_payload(got->bytes.data(), got->bytes.size(), bytes);
        !err.empty())
      return run_outcome::failed(err);
    if (mode_ == rdma_mode::given_back)
      c.give_back(std::move(got->bytes));
    return finish_run(secs, got->lease_id, before);
  }

  void finish(uint64_t) override {
    if (seat_)
      (void) seat_->end(true);
    writer_.reset(); // back to the pool before the seat's node can go
    if (cold())
      seat_.reset();
  }

  void stop() override {
    writer_.reset();
    seat_.reset();
    owner_.stop();
    env_.reset();
  }

private:
  bool cold() const { return mode_ == rdma_mode::cold || mode_ == rdma_mode::cold_eager; }
  bool defaults() const { return mode_ == rdma_mode::defaults; }

  run_outcome finish_run(double secs, uint64_t lease, const path_counts& before) {
    // The lease is held (and the slot kept) whatever path ran.
    auto held = seat_->hold(handle_, lease);
    auto after = read_paths(seat_->host());
    auto err = defaults() ? expect_chunked(before, after, path_reason::no_offer)
                          : expect_rdma(before, after);
    if (!err.empty())
      return run_outcome::failed(err);
    if (!held.empty())
      return run_outcome::failed(held);
    return run_outcome::took(secs);
  }

  ferry_knobs knobs_;
  ucx_transport transport_;
  rdma_mode mode_;
  std::optional<scoped_transport_env> env_;
  owner_peer owner_;
  std::unique_ptr<consumer_seat> seat_;
  data_handle handle_;
  pinned_ptr writer_;
};

} // namespace

std::unique_ptr<scenario_runner> make_ferry_rdma_runner(const bench_options& opts,
                                                        ucx_transport transport,
                                                        rdma_mode mode) {
  return std::make_unique<ferry_rdma_runner>(opts, transport, mode);
}

} // namespace ferry::bench
