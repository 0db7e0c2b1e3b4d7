#include "tests/support/fake_rdma.hpp"

#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include "protocol/errors.hpp"

namespace ferry::test {

namespace {

class fake_region final : public mapped_region {
public:
  fake_region(std::weak_ptr<fake_rdma_memory> memory, uint64_t bytes,
              std::vector<uint8_t> rkey)
    : memory_(std::move(memory)), bytes_(bytes), rkey_(std::move(rkey)) {}
  ~fake_region() override {
    if (auto m = memory_.lock())
      m->forget(address());
  }
  char* data() const override { return const_cast<char*>(bytes_.data()); }
  uint64_t size() const override { return bytes_.size(); }
  uint64_t address() const override { return reinterpret_cast<uintptr_t>(bytes_.data()); }
  const std::vector<uint8_t>& rkey() const override { return rkey_; }
  uint64_t pinned_bytes() const override { return bytes_.size(); }

private:
  std::weak_ptr<fake_rdma_memory> memory_;
  std::vector<char> bytes_;
  std::vector<uint8_t> rkey_;
};

} // namespace

region_mapper fake_rdma_memory::mapper() {
  std::weak_ptr<fake_rdma_memory> self = shared_from_this();
  return [self](uint64_t bytes)
           -> std::variant<std::unique_ptr<mapped_region>, std::string> {
    auto m = self.lock();
    if (!m)
      return std::string{"the fake memory is gone"};
    return m->map(bytes);
  };
}

std::unique_ptr<mapped_region> fake_rdma_memory::map(uint64_t bytes) {
  // Framed as UCX 1.13 packs a key (the consumer checks the framing): one
  // memory domain (md_map 1), host memory, and an 8-byte key naming the
  // registration.
  std::vector<uint8_t> rkey(8 + 1 + 1 + 8, 0);
  rkey[0] = 1;
  rkey[9] = 8;
  {
    std::lock_guard<std::mutex> guard{mx_};
    auto key = next_key_++;
    std::memcpy(rkey.data() + 10, &key, sizeof(key));
  }
  auto region = std::make_unique<fake_region>(weak_from_this(), bytes, rkey);
  std::lock_guard<std::mutex> guard{mx_};
  regions_[region->address()] = registration{bytes, std::move(rkey)};
  return region;
}

std::optional<std::string> fake_rdma_memory::read(uint64_t addr, uint64_t len,
                                                  const std::vector<uint8_t>& rkey,
                                                  char* into) const {
  std::lock_guard<std::mutex> guard{mx_};
  auto i = regions_.upper_bound(addr);
  if (i == regions_.begin())
    return "no registration holds address " + std::to_string(addr);
  --i;
  const auto& [base, reg] = *i;
  if (addr - base > reg.size || len > reg.size - (addr - base))
    return "the range leaves its registration";
  if (rkey != reg.rkey)
    return std::string{"the remote key does not match the registration"};
  std::memcpy(into, reinterpret_cast<const char*>(addr), len);
  return std::nullopt;
}

size_t fake_rdma_memory::live_regions() const {
  std::lock_guard<std::mutex> guard{mx_};
  return regions_.size();
}

void fake_rdma_memory::forget(uint64_t addr) {
  std::lock_guard<std::mutex> guard{mx_};
  regions_.erase(addr);
}

struct fake_rdma_state {
  std::shared_ptr<fake_rdma_memory> memory;
  mutable std::mutex mx;
  fake_rdma_faults faults;
  std::vector<pinned_ptr> held; // destinations of GETs left out
  std::vector<caf::response_promise> unanswered;
};

namespace {

using fake_get_atom = caf::atom_constant<caf::atom("fake_get")>;

caf::behavior getter(caf::event_based_actor* self,
                     std::shared_ptr<fake_rdma_state> st) {
  return {
    [=](fake_get_atom, uint64_t addr, uint64_t len, const std::vector<uint8_t>& rkey,
        pinned_ptr& dest) -> caf::result<uint64_t> {
      std::lock_guard<std::mutex> guard{st->mx};
      const auto& f = st->faults;
      if (f.never_answer) {
        st->held.push_back(std::move(dest));
        st->unanswered.push_back(self->make_response_promise());
        return caf::delegated<uint64_t>{};
      }
      if (f.abandon_gets) {
        st->held.push_back(std::move(dest));
        return make_error(errc::get_abandoned, "fake: the GET was abandoned");
      }
      if (f.fail_gets)
        return make_error(errc::get_failed, "fake: the GET failed");
      if (!dest || dest->size() < len)
        return make_error(errc::get_failed, "fake: the destination is too small");
      if (auto why = st->memory->read(addr, len, rkey, dest->data()))
        return make_error(errc::get_failed, "fake: " + *why);
      return uint64_t{1000};
    },
  };
}

} // namespace

fake_rdma_reader::fake_rdma_reader(caf::actor_system& sys, arena_pool_actor pool,
                                   std::shared_ptr<fake_rdma_memory> memory)
  : pool_(std::move(pool)), state_(std::make_shared<fake_rdma_state>()) {
  state_->memory = std::move(memory);
  getter_ = sys.spawn(getter, state_);
}

fake_rdma_reader::~fake_rdma_reader() {
  caf::anon_send_exit(getter_, caf::exit_reason::user_shutdown);
}

void fake_rdma_reader::allocate(caf::event_based_actor* self, uint64_t bytes, bool,
                                std::chrono::milliseconds timeout,
                                block_handler done) {
  ++allocations_;
  bool refuse;
  {
    std::lock_guard<std::mutex> guard{state_->mx};
    refuse = state_->faults.refuse_destinations;
  }
  if (refuse)
    return done(make_error(errc::pool_exhausted, "fake: no destination"));
  self->request(pool_, timeout, pool_alloc_atom::value, bytes, true)
    .then([done](pinned_ptr& block) { done(std::move(block)); },
          [done](caf::error& err) { done(std::move(err)); });
}

void fake_rdma_reader::get(caf::event_based_actor* self, uint64_t,
                           const rdma_descriptor& desc, pinned_ptr dest,
                           std::chrono::milliseconds timeout, get_handler done) {
  ++gets_;
  self
    ->request(getter_, timeout, fake_get_atom::value, desc.addr, desc.len, desc.rkey,
              std::move(dest))
    .then([done](uint64_t nanos) { done(nanos); },
          [done](caf::error& err) { done(std::move(err)); });
}

void fake_rdma_reader::recycle(pinned_ptr) {
  ++recycled_;
}

void fake_rdma_reader::set_faults(fake_rdma_faults f) {
  std::lock_guard<std::mutex> guard{state_->mx};
  state_->faults = f;
}

size_t fake_rdma_reader::held_destinations() const {
  std::lock_guard<std::mutex> guard{state_->mx};
  return state_->held.size();
}

} // namespace ferry::test
