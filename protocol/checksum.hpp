// checksum64: a fast 64-bit digest of a byte range, for verifying payloads
// end to end (the job, the tests, `ferry get --verbose`). Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry {

uint64_t checksum64(const void* data, size_t size);

} // namespace ferry
