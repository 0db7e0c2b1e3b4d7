#include "staging/fake_cuda.hpp"

#include <sys/mman.h>

#include <cstring>

#include "protocol/errors.hpp"

namespace ferry::staging {

namespace {

caf::error fake_error(const std::string& call, const std::string& what) {
  return make_error(errc::cuda_error, "fake " + call + ": " + what);
}

} // namespace

fake_cuda::fake_cuda(options opts) : opts_(std::move(opts)) {}

fake_cuda::~fake_cuda() {
  for (auto& [start, bytes] : allocations_)
    munmap(reinterpret_cast<void*>(start), bytes);
}

void fake_cuda::fail(const std::string& call, int times) {
  std::lock_guard<std::mutex> g{mu_};
  failing_[call] = times;
}

void fake_cuda::heal(const std::string& call) {
  std::lock_guard<std::mutex> g{mu_};
  failing_.erase(call);
}

void fake_cuda::hold_events(bool held) {
  std::lock_guard<std::mutex> g{mu_};
  held_ = held;
}

fake_cuda::live_counts fake_cuda::live() const {
  std::lock_guard<std::mutex> g{mu_};
  live_counts c;
  c.allocations = allocations_.size();
  c.registrations = registrations_.size();
  c.streams = streams_.size();
  c.events = events_.size();
  for (auto& [dev, n] : retained_)
    c.retained_contexts += n;
  if (auto i = stacks_.find(std::this_thread::get_id()); i != stacks_.end())
    c.context_depth = i->second.size();
  return c;
}

size_t fake_cuda::calls(const std::string& call) const {
  std::lock_guard<std::mutex> g{mu_};
  auto i = calls_.find(call);
  return i == calls_.end() ? 0 : i->second;
}

cuda_context fake_cuda::current_context() const {
  std::lock_guard<std::mutex> g{mu_};
  auto i = stacks_.find(std::this_thread::get_id());
  return i == stacks_.end() || i->second.empty() ? 0 : i->second.back();
}

// All private helpers run with mu_ held.

caf::error fake_cuda::check(const std::string& call) {
  ++calls_[call];
  auto i = failing_.find(call);
  if (i == failing_.end() || i->second == 0)
    return {};
  if (i->second > 0 && --i->second == 0)
    failing_.erase(i);
  return fake_error(call, "failed on demand");
}

caf::error fake_cuda::need_context(const char* call) {
  if (auto err = check(call))
    return err;
  auto i = stacks_.find(std::this_thread::get_id());
  if (i == stacks_.end() || i->second.empty())
    return fake_error(call, "no current context");
  return {};
}

bool fake_cuda::registered(const void* p, size_t bytes) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto i = registrations_.upper_bound(a);
  if (i == registrations_.begin())
    return false;
  --i;
  return a >= i->first && a - i->first <= i->second && bytes <= i->second - (a - i->first);
}

bool fake_cuda::on_device(device_ptr p, size_t bytes) const {
  auto i = allocations_.upper_bound(p);
  if (i == allocations_.begin())
    return false;
  --i;
  return p >= i->first && p - i->first <= i->second && bytes <= i->second - (p - i->first);
}

caf::error fake_cuda::enqueue(cuda_stream s, pending_copy c, const char* call) {
  auto i = streams_.find(s);
  if (i == streams_.end())
    return fake_error(call, "unknown stream");
  i->second.queue.push_back(c);
  ++i->second.enqueued;
  return {};
}

void fake_cuda::run_until(stream_state& st, uint64_t upto) {
  while (st.done < upto && !st.queue.empty()) {
    auto c = st.queue.front();
    st.queue.pop_front();
    std::memcpy(c.dst, c.src, c.bytes);
    ++st.done;
  }
}

caf::expected<int> fake_cuda::device_count() {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("device_count"))
    return err;
  return opts_.devices;
}

caf::expected<std::string> fake_cuda::pci_bus_id(int device) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("pci_bus_id"))
    return err;
  if (device < 0 || device >= opts_.devices)
    return fake_error("pci_bus_id", "no device " + std::to_string(device));
  if (static_cast<size_t>(device) >= opts_.pci_ids.size())
    return fake_error("pci_bus_id", "no PCI address for device " + std::to_string(device));
  return opts_.pci_ids[device];
}

caf::expected<cuda_context> fake_cuda::retain_context(int device) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("retain_context"))
    return err;
  if (device < 0 || device >= opts_.devices)
    return fake_error("retain_context", "no device " + std::to_string(device));
  ++retained_[device];
  return static_cast<cuda_context>(device + 1);
}

caf::error fake_cuda::release_context(int device) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("release_context"))
    return err;
  auto i = retained_.find(device);
  if (i == retained_.end() || i->second == 0)
    return fake_error("release_context", "not retained");
  if (--i->second == 0)
    retained_.erase(i);
  return {};
}

caf::error fake_cuda::push_context(cuda_context ctx) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("push_context"))
    return err;
  auto i = retained_.find(static_cast<int>(ctx) - 1);
  if (ctx == 0 || i == retained_.end())
    return fake_error("push_context", "context not retained");
  stacks_[std::this_thread::get_id()].push_back(ctx);
  return {};
}

caf::error fake_cuda::pop_context() {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("pop_context"))
    return err;
  auto& stack = stacks_[std::this_thread::get_id()];
  if (stack.empty())
    return fake_error("pop_context", "no current context");
  stack.pop_back();
  return {};
}

caf::error fake_cuda::host_register(void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("host_register"))
    return err;
  auto a = reinterpret_cast<uintptr_t>(ptr);
  if (bytes == 0 || ptr == nullptr)
    return fake_error("host_register", "empty range");
  auto next = registrations_.lower_bound(a);
  bool overlaps = (next != registrations_.end() && next->first < a + bytes)
                  || (next != registrations_.begin()
                      && std::prev(next)->first + std::prev(next)->second > a);
  if (overlaps)
    return fake_error("host_register", "range already registered");
  registrations_.emplace(a, bytes);
  return {};
}

caf::error fake_cuda::host_unregister(void* ptr) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("host_unregister"))
    return err;
  if (registrations_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0)
    return fake_error("host_unregister", "not registered");
  return {};
}

caf::expected<cuda_stream> fake_cuda::stream_create() {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("stream_create"))
    return err;
  auto id = next_id_++;
  streams_[id].ctx = stacks_[std::this_thread::get_id()].back();
  return id;
}

caf::error fake_cuda::stream_destroy(cuda_stream s) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("stream_destroy"))
    return err;
  auto i = streams_.find(s);
  if (i == streams_.end())
    return fake_error("stream_destroy", "unknown stream");
  run_until(i->second, i->second.enqueued); // the driver drains it first
  streams_.erase(i);
  return {};
}

caf::expected<cuda_event> fake_cuda::event_create() {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("event_create"))
    return err;
  auto id = next_id_++;
  events_[id].ctx = stacks_[std::this_thread::get_id()].back();
  return id;
}

caf::error fake_cuda::event_destroy(cuda_event e) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("event_destroy"))
    return err;
  if (events_.erase(e) == 0)
    return fake_error("event_destroy", "unknown event");
  return {};
}

caf::error fake_cuda::event_record(cuda_event e, cuda_stream s) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("event_record"))
    return err;
  auto ev = events_.find(e);
  auto st = streams_.find(s);
  if (ev == events_.end() || st == streams_.end())
    return fake_error("event_record", "unknown event or stream");
  ev->second.stream = s;
  ev->second.waits_for = st->second.enqueued;
  ev->second.polls = 0;
  return {};
}

caf::expected<event_state> fake_cuda::event_query(cuda_event e) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("event_query"))
    return err;
  auto ev = events_.find(e);
  if (ev == events_.end())
    return fake_error("event_query", "unknown event");
  auto st = streams_.find(ev->second.stream);
  if (st == streams_.end() || st->second.done >= ev->second.waits_for)
    return event_state::complete;
  if (held_ || ev->second.polls++ < opts_.not_ready_polls)
    return event_state::not_ready;
  run_until(st->second, ev->second.waits_for);
  return event_state::complete;
}

caf::error fake_cuda::copy_to_host(void* dst, device_ptr src, size_t bytes, cuda_stream s) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("copy_to_host"))
    return err;
  if (!on_device(src, bytes))
    return fake_error("copy_to_host", "source is not one device allocation");
  if (!registered(dst, bytes))
    return fake_error("copy_to_host", "destination is not registered host memory");
  return enqueue(s, {static_cast<char*>(dst), reinterpret_cast<const char*>(src), bytes},
                 "copy_to_host");
}

caf::error fake_cuda::copy_to_device(device_ptr dst, const void* src, size_t bytes,
                                     cuda_stream s) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("copy_to_device"))
    return err;
  if (!on_device(dst, bytes))
    return fake_error("copy_to_device", "destination is not one device allocation");
  if (!registered(src, bytes))
    return fake_error("copy_to_device", "source is not registered host memory");
  return enqueue(s, {reinterpret_cast<char*>(dst), static_cast<const char*>(src), bytes},
                 "copy_to_device");
}

caf::expected<device_ptr> fake_cuda::mem_alloc(size_t bytes) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("mem_alloc"))
    return err;
  if (bytes == 0)
    return fake_error("mem_alloc", "zero bytes");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return fake_error("mem_alloc", "out of memory");
  auto d = reinterpret_cast<device_ptr>(p);
  allocations_.emplace(d, bytes);
  return d;
}

caf::error fake_cuda::mem_free(device_ptr p) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = need_context("mem_free"))
    return err;
  auto i = allocations_.find(p);
  if (i == allocations_.end())
    return fake_error("mem_free", "not allocated");
  munmap(reinterpret_cast<void*>(i->first), i->second);
  allocations_.erase(i);
  return {};
}

caf::expected<memory_kind> fake_cuda::memory_kind_of(device_ptr p, size_t bytes) {
  std::lock_guard<std::mutex> g{mu_};
  if (auto err = check("memory_kind_of"))
    return err;
  if (on_device(p, bytes))
    return memory_kind::device;
  if (registered(reinterpret_cast<const void*>(p), bytes))
    return memory_kind::host;
  return memory_kind::unknown;
}

} // namespace ferry::staging
