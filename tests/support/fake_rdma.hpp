// fake_rdma: registered memory and GETs inside one process, for actor tests
// on CAF's test coordinator (no UCX, no threads).
//
// fake_rdma_memory maps "registered" regions from the heap: a region's
// address is its pointer and its key names the registration, so an arena
// pool (or an external region) built on it hands out blocks whose
// descriptors a GET here can resolve. A region unmapped is gone: a GET of
// it fails, as a NIC's would.
//
// fake_rdma_reader is the consumer's rdma_reader over that memory:
// destinations from a real arena pool actor, a GET as a copy after the
// checks a NIC makes (the range inside one live registration, the key
// matching), answered by a small actor so the answer arrives as a message.
// Faults make it refuse destinations, fail GETs, abandon them (the
// destination is kept, as UCX may still write it) or never answer.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/rdma/rdma_reader.hpp"
#include "rdma/arena_pool.hpp"

namespace ferry::test {

class fake_rdma_memory : public std::enable_shared_from_this<fake_rdma_memory> {
public:
  /// A mapper for an arena pool (or an external region) over this memory.
  region_mapper mapper();

  /// A fresh region of `bytes` (zeroed).
  std::unique_ptr<mapped_region> map(uint64_t bytes);

  /// Copies [addr, addr + len) into `into`, or says why a NIC would refuse.
  std::optional<std::string> read(uint64_t addr, uint64_t len,
                                  const std::vector<uint8_t>& rkey, char* into) const;

  size_t live_regions() const;

  /// Called by a region as it unmaps.
  void forget(uint64_t addr);

private:
  struct registration {
    uint64_t size;
    std::vector<uint8_t> rkey;
  };
  mutable std::mutex mx_;
  std::map<uint64_t, registration> regions_; // by address
  uint64_t next_key_ = 1;
};

struct fake_rdma_faults {
  bool refuse_destinations = false;
  bool fail_gets = false;    // answered get_failed
  bool abandon_gets = false; // answered get_abandoned, destination kept
  bool never_answer = false; // the GET stays out (the consumer's timeout ends it)
};

struct fake_rdma_state; // shared with the GET actor

class fake_rdma_reader final : public rdma_reader {
public:
  fake_rdma_reader(caf::actor_system& sys, arena_pool_actor pool,
                   std::shared_ptr<fake_rdma_memory> memory);
  ~fake_rdma_reader() override;

  void allocate(caf::event_based_actor* self, uint64_t bytes, bool for_get,
                std::chrono::milliseconds timeout, block_handler done) override;
  void get(caf::event_based_actor* self, uint64_t worker_id,
           const rdma_descriptor& desc, pinned_ptr dest,
           std::chrono::milliseconds timeout, get_handler done) override;
  void recycle(pinned_ptr block) override;
  const arena_pool_actor& pool() const override { return pool_; }

  /// Set between gets (read by the GET actor when a GET arrives).
  void set_faults(fake_rdma_faults f);

  uint64_t allocations() const { return allocations_; }
  uint64_t gets() const { return gets_; }
  uint64_t recycled() const { return recycled_; }
  /// Destinations kept because a GET was abandoned or never answered.
  size_t held_destinations() const;

private:
  arena_pool_actor pool_;
  std::shared_ptr<fake_rdma_state> state_;
  caf::actor getter_;
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> gets_{0};
  std::atomic<uint64_t> recycled_{0};
};

} // namespace ferry::test
