// control_channel_choice: whether this node serves the channel that carries
// the rendezvous calls over UCX active messages (issue 23), from its setting,
// its UCX and its TLS, and the hello capability that offers it (with the
// pair token). A peer's calls take the channel when both nodes serve it and
// the probe round trip answered; CAF requests otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

/// The capability a node's hello carries when it serves the channel.
inline constexpr std::string_view ucx_am_capability = "ucx_am";

enum class control_channel : uint8_t { caf, ucx_am };

/// The knob: auto (the channel where both nodes can, except on a node with
/// TLS, whose calls stay inside it), ucx_am (as auto, with TLS too) or caf
/// (never).
enum class control_channel_setting : uint8_t { automatic, caf, ucx_am };

const char* to_string(control_channel c) noexcept;
const char* to_string(control_channel_setting s) noexcept;

/// "auto", "ucx_am" or "caf"; none for anything else.
std::optional<control_channel_setting> parse_control_channel_setting(std::string_view s);

/// Whether this node serves the channel (tells "ucx_am" in its hello) with
/// its setting, UCX or not, and TLS on its CAF connections or not.
bool serves_control_channel(control_channel_setting mine, bool ucx_here, bool tls) noexcept;

/// The hello's capability that offers the channel with the token this node
/// expects in the peer's frames: "ucx_am:" and 16 hex digits. It goes in one
/// hello only (each hello agrees on fresh tokens) and is kept out of what a
/// node shows of its peers (shown_capabilities).
std::string control_token_capability(uint64_t token);

/// The token a hello's capabilities offer; none when there is none, it is 0
/// or not 16 hex digits.
std::optional<uint64_t> control_token_of(const std::vector<std::string>& caps);

/// The capabilities with every token capability shown as plain "ucx_am".
std::vector<std::string> shown_capabilities(const std::vector<std::string>& caps);

/// A fresh, unpredictable pair token (never 0).
uint64_t fresh_control_token();

} // namespace ferry
