#include "rdma/control_channel_choice.hpp"

#include <algorithm>

namespace ferry {

const char* to_string(control_channel c) noexcept {
  return c == control_channel::ucx_am ? "ucx_am" : "caf";
}

const char* to_string(control_channel_reason r) noexcept {
  switch (r) {
    case control_channel_reason::both_ucx_am:
      return "both_ucx_am";
    case control_channel_reason::forced_caf:
      return "forced_caf";
    case control_channel_reason::no_ucx_here:
      return "no_ucx_here";
    case control_channel_reason::peer_without_am:
      return "peer_without_am";
  }
  return "unknown";
}

const char* to_string(control_channel_setting s) noexcept {
  return s == control_channel_setting::caf ? "caf" : "auto";
}

std::optional<control_channel_setting> parse_control_channel_setting(std::string_view s) {
  if (s == "auto")
    return control_channel_setting::automatic;
  if (s == "caf")
    return control_channel_setting::caf;
  return std::nullopt;
}

bool serves_control_channel(control_channel_setting mine, bool ucx_here) noexcept {
  return ucx_here && mine == control_channel_setting::automatic;
}

control_channel_choice choose_control_channel(control_channel_setting mine,
                                              bool ucx_here,
                                              const std::vector<std::string>& peer_caps) {
  using reason = control_channel_reason;
  if (mine == control_channel_setting::caf)
    return {control_channel::caf, reason::forced_caf};
  if (!ucx_here)
    return {control_channel::caf, reason::no_ucx_here};
  if (std::find(peer_caps.begin(), peer_caps.end(), ucx_am_capability) == peer_caps.end())
    return {control_channel::caf, reason::peer_without_am};
  return {control_channel::ucx_am, reason::both_ucx_am};
}

} // namespace ferry
