// hex_text: bytes <-> lowercase hex, for passing UCX worker addresses and
// packed keys over the peer's text control channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::bench {

std::string to_hex(const void* data, size_t size);

/// False on an odd length or a non-hex character.
bool from_hex(const std::string& text, std::vector<uint8_t>* out);

} // namespace ferry::bench
