// rdma_descriptor: the binary answer an owner sends when it grants an RDMA GET.
// Owns: the descriptor value, its exact little-endian wire form, and the strict
// decoder that accounts for every byte it is given.
// Must never: throw, allocate before the framing is proven, read outside the
// buffer it was handed, or depend on CAF or UCX (it is compiled into a fuzzer).
//
// Wire form (all integers little-endian, 29-byte header, then the key):
//   offset  0  backend     u8   1 = ucx
//   offset  1  version     u8   1
//   offset  2  flags       u8   0
//   offset  3  generation  u64  the owner's registration generation (diagnostics)
//   offset 11  addr        u64  absolute address in the owner's process
//   offset 19  len         u64  bytes to read, never 0
//   offset 27  rkey_len    u16  at most max_descriptor_rkey_bytes
//   offset 29  rkey        rkey_len bytes, and then the buffer ends
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ferry {

inline constexpr uint8_t descriptor_backend_ucx = 1;
inline constexpr uint8_t descriptor_version_1 = 1;
inline constexpr size_t descriptor_header_bytes = 29;
inline constexpr size_t max_descriptor_rkey_bytes = 4096;
inline constexpr size_t max_descriptor_bytes =
  descriptor_header_bytes + max_descriptor_rkey_bytes;

struct rdma_descriptor {
  uint8_t backend = descriptor_backend_ucx;
  uint8_t version = descriptor_version_1;
  uint8_t flags = 0;
  uint64_t generation = 0;
  uint64_t addr = 0;
  uint64_t len = 0;
  std::vector<uint8_t> rkey; // opaque packed key of the backend

  friend bool operator==(const rdma_descriptor& a, const rdma_descriptor& b) {
    return a.backend == b.backend && a.version == b.version
           && a.flags == b.flags && a.generation == b.generation
           && a.addr == b.addr && a.len == b.len && a.rkey == b.rkey;
  }
  friend bool operator!=(const rdma_descriptor& a, const rdma_descriptor& b) {
    return !(a == b);
  }
};

/// Why a byte string is not a descriptor. The names double as metric labels.
enum class descriptor_refusal : uint8_t {
  too_short,         // fewer than the 29 header bytes
  unknown_backend,   // backend is not 1 (ucx)
  unknown_version,   // version is not 1
  nonzero_flags,     // flags carries a bit this version does not define
  zero_len,          // len is 0: nothing to GET
  range_overflow,    // addr + len wraps past 2^64: no such range of memory
  rkey_too_long,     // rkey_len above max_descriptor_rkey_bytes
  rkey_len_mismatch, // fewer key bytes follow the header than rkey_len says
  trailing_bytes,    // bytes left after the key
};

/// Stable snake_case name of a refusal, e.g. "rkey_len_mismatch".
const char* to_string(descriptor_refusal r) noexcept;

/// Either a descriptor (ok()) or the first rule the input broke.
struct descriptor_decode_result {
  std::optional<rdma_descriptor> descriptor; // engaged exactly when ok()
  descriptor_refusal refusal = descriptor_refusal::too_short; // when !ok()

  bool ok() const noexcept {
    return descriptor.has_value();
  }
  explicit operator bool() const noexcept {
    return ok();
  }
};

/// Checks a value against the rules decode_descriptor enforces, in the same
/// order. Returns nothing when the value would round-trip.
std::optional<descriptor_refusal>
validate_descriptor(const rdma_descriptor& d) noexcept;

/// Writes the wire form. Returns an empty vector when validate_descriptor
/// refuses the value, so an owner can never emit bytes a consumer refuses;
/// otherwise decode_descriptor(encode_descriptor(d)) gives back d.
std::vector<uint8_t> encode_descriptor(const rdma_descriptor& d);

/// Strict decoder: reads at most `size` bytes from `data` (which may be null
/// when size is 0) and accepts only an exact descriptor whose range
/// [addr, addr + len) does not wrap past 2^64. An empty rkey is
/// framing-valid here; the backend's own key check refuses it later.
descriptor_decode_result decode_descriptor(const uint8_t* data,
                                           size_t size) noexcept;

} // namespace ferry
