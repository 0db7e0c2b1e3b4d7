#include "bench/seated_owner.hpp"

namespace ferry::bench {

std::string seated_owner::start(const ferry_knobs& knobs, std::optional<ucx_transport> rdma,
                                int count, const std::string& seat_name) {
  std::vector<std::string> owner_env;
  if (rdma) {
    env.emplace(*rdma);
    owner_env = ucx_peer_env(*rdma);
  }
  if (auto err = owner.start(knobs, rdma.has_value(), owner_env); !err.empty())
    return err;
  for (int i = 0; i < count; ++i) {
    seats.push_back(std::make_unique<consumer_seat>(knobs, owner.endpoint(), rdma.has_value()));
    if (!seats.back()->error().empty())
      return seat_name + " " + std::to_string(i) + ": " + seats.back()->error();
  }
  return {};
}

void seated_owner::stop() {
  seats.clear();
  owner.stop();
  env.reset();
}

} // namespace ferry::bench
