// ucx_region: a registration through UCX (ucp_mem_map), as the arena pool
// and the region registry see it. For arenas with a shared-memory transport
// on, UCX allocates the pages itself so a same-host peer reads them
// one-sided; external regions are registered in place.
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "rdma/arena_pool.hpp"
#include "rdma/region_registry.hpp"
#include "rdma/ucx_memory.hpp"

namespace ferry {

class ucx_region : public mapped_region {
public:
  explicit ucx_region(ucx_memory mem) : mem_(std::move(mem)) {}
  char* data() const override { return static_cast<char*>(mem_.data()); }
  uint64_t size() const override { return mem_.size(); }
  uint64_t address() const override { return mem_.address(); }
  const std::vector<uint8_t>& rkey() const override { return mem_.rkey(); }
  uint64_t pinned_bytes() const override { return mem_.effective_size(); }

private:
  ucx_memory mem_;
};

/// A region_mapper over a UCX context (kept alive by the mapper).
inline region_mapper make_ucx_mapper(std::shared_ptr<const ucx_context> ctx) {
  return [ctx](uint64_t bytes)
           -> std::variant<std::unique_ptr<mapped_region>, std::string> {
    auto mem = ucx_memory::map(*ctx, bytes, ctx->prefers_ucx_allocation());
    if (!mem)
      return mem.error_message();
    return std::make_unique<ucx_region>(std::move(*mem));
  };
}

/// An external_mapper over a UCX context: registers caller-owned memory in
/// place (ucp_mem_map without UCP_MEM_MAP_ALLOCATE).
inline external_mapper make_ucx_external_mapper(std::shared_ptr<const ucx_context> ctx) {
  return [ctx](char* data, uint64_t size)
           -> std::variant<std::unique_ptr<mapped_region>, std::string> {
    auto mem = ucx_memory::map_existing(*ctx, data, size);
    if (!mem)
      return mem.error_message();
    return std::make_unique<ucx_region>(std::move(*mem));
  };
}

} // namespace ferry
