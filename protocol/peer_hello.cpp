#include "protocol/peer_hello.hpp"

#include "protocol/errors.hpp"

namespace ferry {

namespace {

caf::error refuse(std::string why) {
  return make_error(errc::protocol_violation, "hello refused: " + std::move(why));
}

} // namespace

caf::error check_hello_fields(const peer_hello& h) {
  using limits = peer_hello_limits;
  if (h.worker_id == 0)
    return refuse("worker id 0");
  if (h.ucx_address.size() > limits::max_ucx_address)
    return refuse("UCX address of " + std::to_string(h.ucx_address.size())
                  + " bytes (at most " + std::to_string(limits::max_ucx_address) + ")");
  if (h.host.size() > limits::max_name)
    return refuse("host name of " + std::to_string(h.host.size()) + " bytes");
  if (h.capabilities.size() > limits::max_capabilities)
    return refuse(std::to_string(h.capabilities.size()) + " capabilities");
  for (const auto& c : h.capabilities)
    if (c.size() > limits::max_name)
      return refuse("a capability name of " + std::to_string(c.size()) + " bytes");
  return caf::none;
}

caf::error check_hello(const peer_hello& h) {
  if (h.worker_id != 0 && !h.gateway)
    return refuse("no gateway actor");
  return check_hello_fields(h);
}

} // namespace ferry
