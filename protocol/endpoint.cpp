#include "protocol/endpoint.hpp"

#include <algorithm>

#include "protocol/errors.hpp"

namespace ferry {

caf::expected<std::pair<std::string, uint16_t>>
parse_endpoint(const std::string& endpoint) {
  auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size())
    return make_error(errc::invalid_argument,
                      "expected HOST:PORT, got '" + endpoint + "'");
  auto host = endpoint.substr(0, colon);
  if (host.size() > 255) // a DNS name's bound
    return make_error(errc::invalid_argument, "host name over 255 characters");
  auto port_text = endpoint.substr(colon + 1);
  if (!std::all_of(port_text.begin(), port_text.end(),
                   [](char c) { return c >= '0' && c <= '9'; })
      || port_text.size() > 5 || std::stoul(port_text) == 0
      || std::stoul(port_text) > 65535)
    return make_error(errc::invalid_argument,
                      "bad port in '" + endpoint + "'");
  return std::make_pair(host, static_cast<uint16_t>(std::stoul(port_text)));
}

std::string endpoint_text(const std::string& host, uint16_t port) {
  return host + ":" + std::to_string(port);
}

} // namespace ferry
