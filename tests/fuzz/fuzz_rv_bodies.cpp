// libFuzzer target: the seven _rv_* JSON bodies (requests and answers) on
// arbitrary bytes. The first byte picks the body type, the rest is the
// body. Besides ASan/UBSan findings it aborts when a decode throws, or
// when an accepted body does not survive encode -> decode unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/rv_messages.hpp"

namespace {

using namespace ferry;

bool same(const rv_acquire_request& a, const rv_acquire_request& b) {
  return a.handle == b.handle && a.lease_ms == b.lease_ms && a.eager_max == b.eager_max
         && a.rdma.has_value() == b.rdma.has_value()
         && (!a.rdma || a.rdma->backends == b.rdma->backends);
}
bool same(const rv_acquire_response& a, const rv_acquire_response& b) {
  if (a.ready.has_value() != b.ready.has_value() || a.rdma.has_value() != b.rdma.has_value())
    return false;
  if (a.ready)
    return a.ready->lease_id == b.ready->lease_id
           && a.ready->transfer_id == b.ready->transfer_id
           && a.ready->chunk_size == b.ready->chunk_size
           && a.ready->chunk_count == b.ready->chunk_count
           && a.ready->total_len == b.ready->total_len && a.ready->eager == b.ready->eager;
  return a.rdma->lease_id == b.rdma->lease_id && a.rdma->descriptor == b.rdma->descriptor
         && a.rdma->lease_timeout_ms == b.rdma->lease_timeout_ms
         && a.rdma->total_len == b.rdma->total_len;
}
bool same(const rv_metadata_request& a, const rv_metadata_request& b) {
  return a.handle == b.handle;
}
bool same(const rv_metadata_response& a, const rv_metadata_response& b) {
  return a.total_len == b.total_len && a.refcount == b.refcount && a.pinned == b.pinned;
}
bool same(const rv_pull_request& a, const rv_pull_request& b) {
  return a.transfer_id == b.transfer_id && a.index == b.index;
}
bool same(const rv_ref_request& a, const rv_ref_request& b) { return a.handle == b.handle; }
bool same(const rv_ref_response& a, const rv_ref_response& b) {
  return a.refcount == b.refcount;
}
bool same(const rv_detach_request& a, const rv_detach_request& b) {
  return a.handle == b.handle && a.lease_id == b.lease_id;
}
bool same(const rv_release_request& a, const rv_release_request& b) {
  return a.handle == b.handle && a.lease_id == b.lease_id;
}
bool same(const rv_release_response& a, const rv_release_response& b) {
  return a.refcount == b.refcount && a.freed == b.freed;
}
bool same(const rv_lease_renew_request& a, const rv_lease_renew_request& b) {
  return a.handle == b.handle && a.lease_id == b.lease_id && a.held == b.held;
}

template <class T>
void check(std::string_view body) {
  caf::expected<T> r = caf::error{};
  try {
    r = decode<T>(body);
  } catch (...) {
    std::abort(); // decode must turn every failure into an error value
  }
  if (!r)
    return;
  auto again = decode<T>(encode(*r));
  if (!again || !same(*r, *again))
    std::abort(); // what it accepted does not round-trip
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view body{reinterpret_cast<const char*>(data + 1), size - 1};
  switch (data[0] % 11) {
    case 0: check<rv_metadata_request>(body); break;
    case 1: check<rv_metadata_response>(body); break;
    case 2: check<rv_acquire_request>(body); break;
    case 3: check<rv_acquire_response>(body); break;
    case 4: check<rv_pull_request>(body); break;
    case 5: check<rv_ref_request>(body); break;
    case 6: check<rv_ref_response>(body); break;
    case 7: check<rv_detach_request>(body); break;
    case 8: check<rv_release_request>(body); break;
    case 9: check<rv_release_response>(body); break;
    default: check<rv_lease_renew_request>(body); break;
  }
  return 0;
}
