// ucx_memory: one UCX memory registration (ucp_mem_map .. ucp_mem_unmap) and
// its packed remote key.
// Owns: the ucp_mem_h, the packed rkey bytes, and — when UCX allocated the
// pages (UCP_MEM_MAP_ALLOCATE) — the pages themselves, which die with the
// unmap. Memory passed to map_existing stays the caller's: it must stay
// valid and in place until this object is destroyed.
// Must never: hand out a packed key longer than the bound it was mapped
// with (at most max_ucx_rkey_bytes; the mapping is refused instead), or free
// pages before UCX has unmapped them. It keeps its context alive itself.
// Note: a registration is remotely writable, not only readable — UCP has no
// access-rights field — so a key goes only to peers this node trusts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <ucp/api/ucp.h>

#include "rdma/rkey_preparse.hpp" // max_ucx_rkey_bytes
#include "rdma/ucx_context.hpp"
#include "rdma/ucx_status.hpp"

namespace ferry {

class ucx_memory {
public:
  /// Registers `size` fresh bytes. With `allocate_by_ucx`, UCX allocates
  /// them (UCP_MEM_MAP_ALLOCATE): over posix/sysv a same-host peer then reads
  /// them one-sided (see ucx_context::prefers_ucx_allocation). Without it,
  /// page-aligned anonymous memory is allocated here and registered.
  /// `rkey_limit` (clamped to max_ucx_rkey_bytes) refuses the mapping when
  /// the packed key would be longer.
  static ucx_result<ucx_memory> map(const ucx_context& context, std::size_t size,
                                    bool allocate_by_ucx,
                                    std::size_t rkey_limit = max_ucx_rkey_bytes);

  /// Registers caller-owned memory [ptr, ptr + size), which must be readable
  /// and writable and stay put until this object is destroyed.
  static ucx_result<ucx_memory> map_existing(const ucx_context& context, void* ptr,
                                             std::size_t size,
                                             std::size_t rkey_limit = max_ucx_rkey_bytes);

  ucx_memory(ucx_memory&& other) noexcept;
  ucx_memory& operator=(ucx_memory&& other) noexcept;
  ucx_memory(const ucx_memory&) = delete;
  ucx_memory& operator=(const ucx_memory&) = delete;
  /// Unmaps; frees the pages if they were allocated by map().
  ~ucx_memory();

  /// The bytes a caller may use: [data(), data() + size()).
  void* data() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }
  std::uint64_t address() const noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(base_));
  }

  /// What UCX reports as registered (ucp_mem_query); at least [data, size).
  /// Registered means remotely accessible: a key holder can touch it.
  /// On UCX 1.13 that is exactly [data, size) for map_existing and the
  /// page-rounded allocation for UCP_MEM_MAP_ALLOCATE.
  void* effective_base() const noexcept { return effective_base_; }
  std::size_t effective_size() const noexcept { return effective_size_; }
  /// The effective range widened to whole pages: what registration pins,
  /// and what a registered-bytes budget should count.
  std::size_t page_bytes() const noexcept;

  /// Packed remote key (ucp_rkey_pack), never longer than the map bound.
  const std::vector<std::uint8_t>& rkey() const noexcept { return rkey_; }

  bool allocated_by_ucx() const noexcept { return ucx_allocated_; }
  ucp_mem_h native() const noexcept { return memh_; }

private:
  enum class owner { caller, ferry_mmap, ucx };

  ucx_memory() = default;
  static ucx_result<ucx_memory> finish(const ucx_context& context, void* ptr,
                                       std::size_t size, unsigned flags,
                                       owner pages, std::size_t rkey_limit);
  void release() noexcept;

  ucx_context_ptr ctx_;
  ucp_mem_h memh_ = nullptr;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  void* effective_base_ = nullptr;
  std::size_t effective_size_ = 0;
  std::vector<std::uint8_t> rkey_;
  owner pages_ = owner::caller;
  bool ucx_allocated_ = false;
};

} // namespace ferry
