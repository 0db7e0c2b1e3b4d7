#include "rdma/control_channel_choice.hpp"

#include <algorithm>
#include <random>

#include "protocol/hex64.hpp"

namespace ferry {

const char* to_string(control_channel c) noexcept {
  return c == control_channel::ucx_am ? "ucx_am" : "caf";
}

const char* to_string(control_channel_setting s) noexcept {
  switch (s) {
    case control_channel_setting::caf:
      return "caf";
    case control_channel_setting::ucx_am:
      return "ucx_am";
    case control_channel_setting::automatic:
      break;
  }
  return "auto";
}

std::optional<control_channel_setting> parse_control_channel_setting(std::string_view s) {
  if (s == "auto")
    return control_channel_setting::automatic;
  if (s == "caf")
    return control_channel_setting::caf;
  if (s == "ucx_am")
    return control_channel_setting::ucx_am;
  return std::nullopt;
}

bool serves_control_channel(control_channel_setting mine, bool ucx_here, bool tls) noexcept {
  using s = control_channel_setting;
  return ucx_here && (mine == s::ucx_am || (mine == s::automatic && !tls));
}

namespace {

constexpr std::string_view token_prefix = "ucx_am:";

bool is_token_capability(const std::string& c) {
  return c.size() > token_prefix.size() && c.compare(0, token_prefix.size(), token_prefix) == 0;
}

} // namespace

std::string control_token_capability(uint64_t token) {
  return std::string{token_prefix} + hex64(token);
}

std::optional<uint64_t> control_token_of(const std::vector<std::string>& caps) {
  for (const auto& c : caps) {
    if (!is_token_capability(c))
      continue;
    auto hex = std::string_view{c}.substr(token_prefix.size());
    if (hex.size() != 16)
      return std::nullopt;
    uint64_t v = 0;
    for (char ch : hex) {
      int d = ch >= '0' && ch <= '9'   ? ch - '0'
              : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                       : -1;
      if (d < 0)
        return std::nullopt;
      v = (v << 4) | static_cast<uint64_t>(d);
    }
    if (v == 0)
      return std::nullopt;
    return v;
  }
  return std::nullopt;
}

std::vector<std::string> shown_capabilities(const std::vector<std::string>& caps) {
  std::vector<std::string> out;
  for (const auto& c : caps) {
    auto shown = is_token_capability(c) ? std::string{ucx_am_capability} : c;
    if (std::find(out.begin(), out.end(), shown) == out.end())
      out.push_back(std::move(shown));
  }
  return out;
}

uint64_t fresh_control_token() {
  std::random_device rd; // the kernel's random source on Linux
  for (;;) {
    uint64_t t = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    if (t != 0)
      return t;
  }
}

} // namespace ferry
