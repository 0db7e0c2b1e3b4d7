#include "staging/staged_copy.hpp"

#include <cstring>
#include <thread>

#include "protocol/errors.hpp"

namespace ferry::staging {

namespace detail {

caf::error wait_event(cuda_api& api, cuda_event e, std::chrono::milliseconds bound) {
  auto until = std::chrono::steady_clock::now() + bound;
  auto pause = std::chrono::microseconds{0};
  for (;;) {
    auto s = api.event_query(e);
    if (!s)
      return std::move(s.error());
    if (*s == event_state::complete)
      return {};
    if (std::chrono::steady_clock::now() >= until)
      return make_error(errc::timeout, "a staging chunk's copy did not complete within "
                                         + std::to_string(bound.count()) + " ms");
    if (pause.count() == 0)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(pause);
    pause = std::min(std::chrono::microseconds{200}, pause + std::chrono::microseconds{10});
  }
}

caf::error copy_piece(cuda_api& api, pinned_chunk& chunk, const copy_job& job,
                      size_t offset, size_t n, bool& in_flight) {
  in_flight = false;
  if (job.direction == copy_direction::to_device)
    std::memcpy(chunk.data(), job.host + offset, n);
  auto err = job.direction == copy_direction::to_host
               ? api.copy_to_host(chunk.data(), job.device + offset, n, chunk.stream)
               : api.copy_to_device(job.device + offset, chunk.data(), n, chunk.stream);
  if (err)
    return err; // not queued
  in_flight = true;
  if (auto e = api.event_record(chunk.event, chunk.stream))
    return e; // queued, with no event to wait on
  if (auto e = wait_event(api, chunk.event, job.event_bound))
    return e;
  in_flight = false;
  if (job.direction == copy_direction::to_host)
    std::memcpy(job.host + offset, chunk.data(), n);
  return {};
}

} // namespace detail

copy_result run_staged_copy(cuda_api& api, pinned_chunk& chunk, const copy_job& job) {
  return run_staged_copy(api, chunk, job, [](size_t) {});
}

} // namespace ferry::staging
