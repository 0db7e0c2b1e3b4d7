// hex64: a 64-bit id as ferry writes it in text (handles, worker ids,
// tokens): exactly 16 hex digits, lowercase when written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferry {

/// 16 lowercase hex digits.
std::string hex64(uint64_t v);

/// Exactly 16 hex digits, either case; nullopt for anything else.
std::optional<uint64_t> parse_hex64(std::string_view s);

} // namespace ferry
