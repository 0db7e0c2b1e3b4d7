// fake_cuda: the cuda_api of the CPU tests. "Device" memory is real mapped
// host bytes; contexts, streams and events are simulated: a copy runs when
// an event recorded after it is found complete, and a query answers
// not_ready a set number of times first, so callers that skip the wait see
// stale bytes. Any call can be made to fail on demand, and the fake counts
// what is live (allocations, registrations, streams, events, retained
// contexts), so a test can prove nothing leaked.
// Rules it enforces like the driver: a current context for everything but
// device queries and context calls; copies only to or from host memory
// registered through it (staging copies go through pinned chunks); no
// overlapping registrations; device ranges inside one allocation.
// Thread-safe (one mutex); the context stack is per calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "staging/cuda_api.hpp"

namespace ferry::staging {

class fake_cuda : public cuda_api {
public:
  struct options {
    int devices = 1;
    int not_ready_polls = 2; // queries that answer not_ready before a copy runs
    std::vector<std::string> pci_ids{"0000:3b:00.0"};
  };

  fake_cuda() : fake_cuda(options{}) {}
  explicit fake_cuda(options opts);
  ~fake_cuda() override;

  /// The next `times` calls named `call` ("host_register", "event_query",
  /// ...) fail; times < 0: every call from now on.
  void fail(const std::string& call, int times = 1);
  void heal(const std::string& call);
  /// While held, every event query answers not_ready (a device that is
  /// slow or hung); copies stay queued.
  void hold_events(bool held);

  struct live_counts {
    size_t allocations = 0, registrations = 0, streams = 0, events = 0;
    size_t retained_contexts = 0, context_depth = 0; // depth: this thread's
  };
  live_counts live() const;
  /// How often `call` ran (failed ones included).
  size_t calls(const std::string& call) const;
  /// The context current on this thread (0: none).
  cuda_context current_context() const;

  std::string unavailable_reason() const override { return {}; }
  const char* backend() const override { return "fake"; }
  caf::expected<int> device_count() override;
  caf::expected<std::string> pci_bus_id(int device) override;
  caf::expected<cuda_context> retain_context(int device) override;
  caf::error release_context(int device) override;
  caf::error push_context(cuda_context ctx) override;
  caf::error pop_context() override;
  caf::error host_register(void* ptr, size_t bytes) override;
  caf::error host_unregister(void* ptr) override;
  caf::expected<cuda_stream> stream_create() override;
  caf::error stream_destroy(cuda_stream s) override;
  caf::expected<cuda_event> event_create() override;
  caf::error event_destroy(cuda_event e) override;
  caf::error event_record(cuda_event e, cuda_stream s) override;
  caf::expected<event_state> event_query(cuda_event e) override;
  caf::error copy_to_host(void* dst, device_ptr src, size_t bytes, cuda_stream s) override;
  caf::error copy_to_device(device_ptr dst, const void* src, size_t bytes,
                            cuda_stream s) override;
  caf::expected<device_ptr> mem_alloc(size_t bytes) override;
  caf::error mem_free(device_ptr p) override;
  caf::expected<memory_kind> memory_kind_of(device_ptr p, size_t bytes) override;

private:
  struct pending_copy {
    char* dst;
    const char* src;
    size_t bytes;
  };
  struct stream_state {
    cuda_context ctx;
    std::deque<pending_copy> queue;
    uint64_t enqueued = 0; // copies ever queued
    uint64_t done = 0;     // copies run
  };
  struct event_state_rec {
    cuda_context ctx;
    cuda_stream stream = 0; // 0: never recorded (complete)
    uint64_t waits_for = 0; // the stream's `enqueued` when recorded
    int polls = 0;
  };

  caf::error check(const std::string& call); // counts, fails on demand
  caf::error need_context(const char* call);
  bool registered(const void* p, size_t bytes) const;
  bool on_device(device_ptr p, size_t bytes) const;
  caf::error enqueue(cuda_stream s, pending_copy c, const char* call);
  void run_until(stream_state& st, uint64_t upto);

  options opts_;
  bool held_ = false;
  mutable std::mutex mu_;
  std::map<std::string, int> failing_;
  std::map<std::string, size_t> calls_;
  std::map<int, size_t> retained_; // device -> retains
  std::map<std::thread::id, std::vector<cuda_context>> stacks_;
  std::map<uintptr_t, size_t> registrations_; // host start -> bytes
  std::map<uintptr_t, size_t> allocations_;   // device start -> bytes
  std::map<cuda_stream, stream_state> streams_;
  std::map<cuda_event, event_state_rec> events_;
  uint64_t next_id_ = 1;
};

} // namespace ferry::staging
