// cuda_api: everything staging/ needs from CUDA, as one small interface with
// two implementations side by side: the driver API loaded at run time
// (cuda_driver.hpp; a machine without a driver still runs ferry and says why
// staging is off) and a fake for CPU tests (fake_cuda.hpp: real mapped host
// bytes as "device" memory, simulated contexts, streams and events).
// Handles are opaque integers; 0 is never a valid one.
// Threading: one caller thread at a time per context (the staging workers).
// Must never: be reached from a cooperative actor (event waits block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/expected.hpp>

namespace ferry::staging {

using cuda_context = uint64_t;
using cuda_stream = uint64_t;
using cuda_event = uint64_t;
using device_ptr = uint64_t;

/// What an event query says.
enum class event_state { complete, not_ready };

/// What memory a pointer range is (remote staging's Pin checks it):
/// device: inside one device allocation; host: CUDA knows it as host
/// memory; unknown: CUDA does not know it (plain host memory).
enum class memory_kind { device, host, unknown };

class cuda_api {
public:
  virtual ~cuda_api() = default;

  /// Empty when usable; else why not (no driver, no device, ...).
  virtual std::string unavailable_reason() const = 0;
  /// "driver" or "fake".
  virtual const char* backend() const = 0;
  virtual caf::expected<int> device_count() = 0;
  /// The device's PCI address ("0000:3b:00.0"), for its NUMA locality.
  virtual caf::expected<std::string> pci_bus_id(int device) = 0;

  /// The device's primary context (retained; release once per retain).
  virtual caf::expected<cuda_context> retain_context(int device) = 0;
  virtual caf::error release_context(int device) = 0;
  /// Makes `ctx` current on this thread; pop restores the one before.
  virtual caf::error push_context(cuda_context ctx) = 0;
  virtual caf::error pop_context() = 0;

  /// Page-locks host memory for the current context's copies.
  virtual caf::error host_register(void* ptr, size_t bytes) = 0;
  virtual caf::error host_unregister(void* ptr) = 0;

  virtual caf::expected<cuda_stream> stream_create() = 0;
  virtual caf::error stream_destroy(cuda_stream s) = 0;
  virtual caf::expected<cuda_event> event_create() = 0;
  virtual caf::error event_destroy(cuda_event e) = 0;
  virtual caf::error event_record(cuda_event e, cuda_stream s) = 0;
  virtual caf::expected<event_state> event_query(cuda_event e) = 0;

  /// Asynchronous copies on `s`; done once an event recorded after them is.
  virtual caf::error copy_to_host(void* dst, device_ptr src, size_t bytes,
                                  cuda_stream s) = 0;
  virtual caf::error copy_to_device(device_ptr dst, const void* src, size_t bytes,
                                    cuda_stream s) = 0;

  /// Device memory in the current context (tests, GPU payload fixtures).
  virtual caf::expected<device_ptr> mem_alloc(size_t bytes) = 0;
  virtual caf::error mem_free(device_ptr p) = 0;

  /// The kind of [p, p + bytes); device only when one allocation holds all
  /// of it (no context needed).
  virtual caf::expected<memory_kind> memory_kind_of(device_ptr p, size_t bytes) = 0;
};

/// Runs `f` with `ctx` current on this thread, restoring the context
/// before; the first error of f or of the restore.
template <class F>
caf::error in_context(cuda_api& api, cuda_context ctx, F f) {
  if (auto err = api.push_context(ctx))
    return err;
  caf::error out = f();
  auto popped = api.pop_context();
  return out ? std::move(out) : std::move(popped);
}

/// Queries event `e` with `ctx` current (restored after): its state, or
/// the first error of the query or of the restore.
inline caf::expected<event_state> query_event_in(cuda_api& api, cuda_context ctx,
                                                 cuda_event e) {
  event_state state = event_state::not_ready;
  auto err = in_context(api, ctx, [&]() -> caf::error {
    auto q = api.event_query(e);
    if (!q)
      return std::move(q.error());
    state = *q;
    return {};
  });
  if (err)
    return err;
  return state;
}

} // namespace ferry::staging
