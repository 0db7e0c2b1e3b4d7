#include "rdma/one_sided_reads.hpp"

#include <algorithm>

#include "rdma/failure_reports_choice.hpp"

namespace ferry {

namespace {

bool tells(const std::vector<std::string>& caps, std::string_view capability) {
  return std::find(caps.begin(), caps.end(), capability) != caps.end();
}

} // namespace

bool is_nic_rma_transport(std::string_view transport) {
  return transport == "rc_verbs" || transport == "rc_mlx5" || transport == "dc_mlx5";
}

bool reads_one_sided(const std::vector<std::string>& my_caps,
                     const std::vector<std::string>& peer_caps) {
  if (shares_memory(my_caps, peer_caps))
    return true;
  return tells(my_caps, nic_rma_capability) && tells(peer_caps, nic_rma_capability);
}

} // namespace ferry
