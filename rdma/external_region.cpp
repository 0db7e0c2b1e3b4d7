#include "rdma/external_region.hpp"

#include <cstring>

#include "rdma/registered_budget.hpp" // page_bytes

namespace ferry {

external_region::anchor::anchor(std::shared_ptr<external_region> region)
  : region_(std::move(region)) {
  // nop: try_anchor already counted this anchor in
}

external_region::anchor::~anchor() {
  region_->in_flight_.fetch_sub(1, std::memory_order_seq_cst);
}

external_region::external_region(char* data, uint64_t size,
                                 std::vector<char> owned)
  : data_(data),
    size_(size),
    owned_(std::move(owned)),
    released_(release_promise_.get_future().share()) {
  // nop
}

uint64_t external_region::effective_begin() const {
  return address() / page_bytes * page_bytes;
}

uint64_t external_region::effective_end() const {
  return round_to_pages(address() + size_);
}

void external_region::attach_mapping(std::unique_ptr<mapped_region> mapping,
                                     uint64_t id, uint64_t generation) {
  rkey_ = std::make_shared<const std::vector<uint8_t>>(mapping->rkey());
  mapping_ = std::move(mapping);
  id_ = id;
  generation_ = generation;
  // Published last: a thread that sees mapped() sees the key and ids too.
  mapped_.store(true, std::memory_order_release);
}

void external_region::drop_mapping() {
  mapped_.store(false, std::memory_order_release);
  mapping_.reset();
}

std::shared_ptr<external_region::anchor> external_region::try_anchor() {
  // Count in first, then read the gate: a drain that closed the gate before
  // this read sees the count; one that closes it after never misses it.
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (gated_.load(std::memory_order_seq_cst)) {
    in_flight_.fetch_sub(1, std::memory_order_seq_cst);
    return nullptr;
  }
  return std::make_shared<anchor>(shared_from_this());
}

bool external_region::copy_out(uint64_t offset, uint64_t len,
                               char* dest) const {
  if (offset > size_ || len > size_ - offset)
    return false;
  std::lock_guard<std::mutex> guard{copy_gate_};
  if (latched_)
    return false;
  // A peer holding the key may write the region at any time: copy bytes,
  // never hand out a pointer into it.
  std::memcpy(dest, data_ + offset, len);
  return true;
}

void external_region::latch() {
  std::lock_guard<std::mutex> guard{copy_gate_};
  latched_ = true;
}

bool external_region::latched() const {
  std::lock_guard<std::mutex> guard{copy_gate_};
  return latched_;
}

void external_region::mark_released(outcome how) {
  std::call_once(release_once_, [&] { release_promise_.set_value(how); });
}

bool external_region::released() const {
  return released_.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
}

std::optional<external_region::outcome>
external_region::wait_released(std::chrono::milliseconds timeout) const {
  if (released_.wait_for(timeout) != std::future_status::ready)
    return std::nullopt;
  return released_.get();
}

std::vector<char> external_region::take_owned() {
  if (!released())
    return {};
  return std::move(owned_);
}

std::vector<char> external_region::take_unregistered_owned() {
  if (mapped() || id_ != 0)
    return {};
  return std::move(owned_);
}

} // namespace ferry
