#include "rdma/ucx_memory.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

namespace ferry {

namespace {

/// A context made without mt_workers_shared (ferry's) does not lock its
/// registration calls. Maps run on the arena pool's thread, but an arena's
/// last share may go on whichever thread drops the last block of it (a
/// block held past a node's stop), so every map and unmap takes this lock.
std::recursive_mutex& registration_lock() {
  static std::recursive_mutex mx; // a failed map unmaps under it
  return mx;
}

} // namespace

ucx_result<ucx_memory> ucx_memory::map(const ucx_context& context, std::size_t size,
                                       bool allocate_by_ucx, std::size_t rkey_limit) {
  if (size == 0)
    return make_ucx_error("ucx_memory::map", UCS_ERR_INVALID_PARAM, "size is 0");
  if (allocate_by_ucx)
    return finish(context, nullptr, size, UCP_MEM_MAP_ALLOCATE, owner::ucx, rkey_limit);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (p == MAP_FAILED)
    return make_ucx_error("ucx_memory::map: mmap", UCS_ERR_NO_MEMORY,
                          std::strerror(errno));
  auto r = finish(context, p, size, 0, owner::ferry_mmap, rkey_limit);
  // On failure `finish` did not take the pages.
  if (!r)
    ::munmap(p, size);
  return r;
}

ucx_result<ucx_memory> ucx_memory::map_existing(const ucx_context& context, void* ptr,
                                                std::size_t size, std::size_t rkey_limit) {
  if (ptr == nullptr || size == 0)
    return make_ucx_error("ucx_memory::map_existing", UCS_ERR_INVALID_PARAM,
                          "null pointer or size 0");
  auto first = reinterpret_cast<std::uintptr_t>(ptr);
  if (first + size < first)
    return make_ucx_error("ucx_memory::map_existing", UCS_ERR_INVALID_PARAM,
                          "range wraps the address space");
  return finish(context, ptr, size, 0, owner::caller, rkey_limit);
}

ucx_result<ucx_memory> ucx_memory::finish(const ucx_context& context, void* ptr,
                                          std::size_t size, unsigned flags, owner pages,
                                          std::size_t rkey_limit) {
  if (context.native() == nullptr)
    return make_ucx_error("ucx_memory", UCS_ERR_INVALID_PARAM,
                          "context is empty (moved from)");
  const std::size_t limit = std::min(rkey_limit, max_ucx_rkey_bytes);
  ucp_mem_map_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH
                      | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.address = ptr;
  params.length = size;
  params.flags = flags;
  ucp_mem_h memh = nullptr;
  std::lock_guard<std::recursive_mutex> guard{registration_lock()};
  ucs_status_t st = ucp_mem_map(context.native(), &params, &memh);
  if (st != UCS_OK)
    return make_ucx_error("ucp_mem_map", st);

  // From here the object owns the registration (and, for owner::ucx or
  // owner::ferry_mmap, the pages): its destructor cleans up on every
  // early return below. For ferry_mmap the caller (map) unmaps the pages
  // itself on failure, so the object only takes them on success.
  ucx_memory out;
  out.ctx_ = context.shared_native();
  out.memh_ = memh;
  out.base_ = ptr;
  out.size_ = size;
  out.pages_ = pages == owner::ferry_mmap ? owner::caller : pages;
  out.ucx_allocated_ = pages == owner::ucx;

  ucp_mem_attr_t attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(memh, &attr);
  if (st != UCS_OK)
    return make_ucx_error("ucp_mem_query", st);
  out.effective_base_ = attr.address;
  out.effective_size_ = attr.length;
  if (pages == owner::ucx)
    out.base_ = attr.address; // UCX chose the address
  if (out.base_ == nullptr)
    return make_ucx_error("ucp_mem_map", UCS_ERR_NO_MEMORY, "no address");

  void* packed = nullptr;
  size_t packed_len = 0;
  st = ucp_rkey_pack(context.native(), memh, &packed, &packed_len);
  if (st != UCS_OK)
    return make_ucx_error("ucp_rkey_pack", st);
  const auto* bytes = static_cast<const std::uint8_t*>(packed);
  out.rkey_.assign(bytes, bytes + packed_len);
  ucp_rkey_buffer_release(packed);
  if (out.rkey_.empty() || out.rkey_.size() > limit)
    return make_ucx_error("ucp_rkey_pack", UCS_ERR_EXCEEDS_LIMIT,
                          "packed key is " + std::to_string(out.rkey_.size())
                              + " bytes, bound is " + std::to_string(limit));
  out.pages_ = pages;
  return out;
}

std::size_t ucx_memory::page_bytes() const noexcept {
  if (effective_size_ == 0)
    return 0;
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::uintptr_t p = page > 0 ? static_cast<std::uintptr_t>(page) : 4096;
  const auto first = reinterpret_cast<std::uintptr_t>(effective_base_);
  const std::uintptr_t begin = first / p * p;
  const std::uintptr_t end = (first + effective_size_ + p - 1) / p * p;
  return static_cast<std::size_t>(end - begin);
}

ucx_memory::ucx_memory(ucx_memory&& other) noexcept
  : ctx_(std::move(other.ctx_)),
    memh_(std::exchange(other.memh_, nullptr)),
    base_(std::exchange(other.base_, nullptr)),
    size_(std::exchange(other.size_, 0)),
    effective_base_(std::exchange(other.effective_base_, nullptr)),
    effective_size_(std::exchange(other.effective_size_, 0)),
    rkey_(std::move(other.rkey_)),
    pages_(std::exchange(other.pages_, owner::caller)),
    ucx_allocated_(std::exchange(other.ucx_allocated_, false)) {
  other.rkey_.clear();
}

ucx_memory& ucx_memory::operator=(ucx_memory&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    memh_ = std::exchange(other.memh_, nullptr);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    effective_base_ = std::exchange(other.effective_base_, nullptr);
    effective_size_ = std::exchange(other.effective_size_, 0);
    rkey_ = std::move(other.rkey_);
    other.rkey_.clear();
    pages_ = std::exchange(other.pages_, owner::caller);
    ucx_allocated_ = std::exchange(other.ucx_allocated_, false);
  }
  return *this;
}

ucx_memory::~ucx_memory() {
  release();
}

void ucx_memory::release() noexcept {
  if (memh_ != nullptr && ctx_) {
    std::lock_guard<std::recursive_mutex> guard{registration_lock()};
    // The unmap comes first: pages are freed only once UCX let go of them.
    // UCX-allocated pages go away with the unmap itself.
    ucs_status_t st = ucp_mem_unmap(ctx_.get(), memh_);
    if (st == UCS_OK && pages_ == owner::ferry_mmap && base_ != nullptr)
      ::munmap(base_, size_);
    // On a failed unmap the pages stay mapped on purpose: a leak is safer
    // than freeing pages UCX may still hold.
    if (st != UCS_OK)
      spdlog::error("ucp_mem_unmap of {} bytes at {} failed ({}): the pages are "
                    "leaked on purpose (UCX may still hold them)",
                    size_, static_cast<void*>(base_), ucs_status_string(st));
  }
  memh_ = nullptr;
  base_ = nullptr;
  size_ = 0;
  effective_base_ = nullptr;
  effective_size_ = 0;
  rkey_.clear();
  pages_ = owner::caller;
  ucx_allocated_ = false;
  ctx_.reset();
}

} // namespace ferry
