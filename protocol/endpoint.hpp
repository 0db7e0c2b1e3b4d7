// endpoint: "HOST:PORT", the address of a node's gateway, as the command
// line, the config file and members' lists give it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <caf/expected.hpp>

namespace ferry {

/// Splits "HOST:PORT" (port 1 to 65535); an error names what is wrong.
caf::expected<std::pair<std::string, uint16_t>>
parse_endpoint(const std::string& endpoint);

/// "HOST:PORT".
std::string endpoint_text(const std::string& host, uint16_t port);

} // namespace ferry
