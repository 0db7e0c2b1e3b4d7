// rkey_preparse: framing check of a UCX 1.13 packed remote key, run before the
// blob may reach ucp_ep_rkey_unpack (which takes no length and reads whatever
// its own parse asks for).
// Owns: the knowledge of the UCX 1.13.1 packed-rkey framing and the rule
// "accept only a blob that UCX's own parse consumes exactly, byte for byte".
// Must never: call UCX, read outside [data, data + size), or pass judgement on
// the key's contents (a stale key with perfect framing passes; that is the
// registration generation's business, not this check's).
//
// UCX 1.13.1 framing, as written by ucp_rkey_pack (ucp_rkey_pack_common) and
// read by ucp_ep_rkey_unpack (ucp_ep_rkey_unpack_internal), host byte order
// (little-endian on every platform ferry builds for):
//   u64 md_map     bitmap of the owner's memory domains
//   u8  mem_type   ucs_memory_type_t; 1.13 defines 0..4 (host, cuda,
//                  cuda_managed, rocm, rocm_managed)
//   for each set bit of md_map, lowest first:
//     u8  key_len
//     key_len bytes of that domain's key
// The public pack never appends anything after the last domain key (it packs
// with sys_dev unknown), and the public unpack passes length 0, so its parse
// stops right there too: any byte after the last key is refused as trailing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry {

/// Bound on a packed UCX key this backend maps, sends or unpacks.
inline constexpr size_t max_ucx_rkey_bytes = 1024;

/// Number of valid ucs_memory_type_t values in UCX 1.13 (UCS_MEMORY_TYPE_LAST).
inline constexpr uint8_t ucx_memory_type_count = 5;

/// Bytes before the first domain key: the md_map and the mem_type.
inline constexpr size_t ucx_rkey_fixed_bytes = 9;

enum class rkey_check : uint8_t {
  ok,             // UCX's parse would end exactly at the last byte
  empty,          // zero bytes
  too_long,       // more than max_ucx_rkey_bytes
  truncated,      // UCX's parse would read past the end of the blob
  bad_mem_type,   // mem_type outside 0 .. ucx_memory_type_count - 1
  trailing_bytes, // UCX's parse would end before the last byte
};

/// Stable snake_case name, e.g. "trailing_bytes".
const char* to_string(rkey_check c) noexcept;

/// Checks the framing of a packed key. Reads only [data, data + size); a null
/// data pointer counts as empty. Checks run in the enum's order: empty,
/// too_long, then the parse (truncated / bad_mem_type as met), then trailing.
rkey_check check_packed_rkey(const uint8_t* data, size_t size) noexcept;

} // namespace ferry
