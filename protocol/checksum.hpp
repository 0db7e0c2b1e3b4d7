// checksum64: a fast 64-bit digest of a byte range, for verifying payloads
// end to end (the job, the tests, `ferry get --verbose`). Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ferry {

uint64_t checksum64(const void* data, size_t size);

/// A checksum as text: "0x" and 16 hex digits, the form the ferry.checksum
/// handler replies and `ferry call` prints.
std::string checksum_text(uint64_t sum);

} // namespace ferry
