// payload: the deterministic byte pattern every bench transfer carries, and
// the checksum a receiver compares against.
// Both processes of a scenario fill with the same (seed, size), so the
// receiver verifies what arrived without trusting anything the sender says:
// a byte out of place (a chunk at the wrong offset, a short read) changes
// the checksum, because ferry::checksum64 (XXH3) depends on the order.
// Must never: allocate the buffer it fills (callers own their memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::bench {

/// The seed of every bench payload (one per run is enough).
inline constexpr uint64_t payload_seed = 0xfe77'0b3e'5eed'0001ULL;

/// Writes the pattern of (seed, size) into [dst, dst + size).
void fill_payload(char* dst, size_t size, uint64_t seed = payload_seed);

/// A vector holding the pattern of (seed, size), for peers that hand the
/// payload to a path that takes ownership (a CAF message, a ferry owner).
/// Its pages are advised huge before the first touch, so building it does
/// not cost ~20 us per 4 KiB page on these VMs. Untimed set-up only.
std::vector<char> make_payload_vector(size_t size, uint64_t seed = payload_seed);

/// ferry::checksum64 of the pattern of (seed, size); computed once per
/// size and remembered (thread-safe).
uint64_t expected_checksum(size_t size, uint64_t seed = payload_seed);

/// ferry::checksum64 of [data, data + size).
uint64_t checksum_of(const void* data, size_t size);

/// Empty when [data, data + got) is the whole pattern of `expected` bytes
/// (default seed); otherwise what is wrong, for a failed point's message.
std::string check_payload(const void* data, size_t got, size_t expected);

} // namespace ferry::bench
