#include "bench/path_check.hpp"

#include <iterator>

#include "actors/rendezvous/path_metrics.hpp"
#include "runtime/node.hpp"

namespace ferry::bench {

namespace {

// Every path_reason, in enum order.
constexpr path_reason all_reasons[] = {
  path_reason::ok,         path_reason::no_offer,       path_reason::not_configured,
  path_reason::kill_switch, path_reason::not_pinned,    path_reason::below_min,
  path_reason::draining,   path_reason::budget,         path_reason::pool_exhausted,
  path_reason::decode_error, path_reason::get_failed,
};
static_assert(std::size(all_reasons) == path_reason_count,
              "every path_reason, in enum order");

} // namespace

path_counts read_paths(node& n) {
  path_counts c;
  for (auto r : all_reasons) {
    c.rdma.push_back(n.paths().value(transfer_path::rdma, r));
    c.chunked.push_back(n.paths().value(transfer_path::chunked, r));
  }
  return c;
}

std::string chunked_reasons(const path_counts& before, const path_counts& after) {
  std::string out;
  for (size_t i = 0; i < std::size(all_reasons); ++i)
    if (after.chunked.at(i) > before.chunked.at(i))
      out += (out.empty() ? "" : ", ") + std::string{to_string(all_reasons[i])};
  return out;
}

std::string expect_rdma(const path_counts& before, const path_counts& after,
                        int gets) {
  auto ok = static_cast<size_t>(path_reason::ok);
  auto rose = after.rdma.at(ok) - before.rdma.at(ok);
  if (rose == gets)
    return {};
  auto why = chunked_reasons(before, after);
  std::string text = "not the RDMA path: rdma/ok rose by " + std::to_string(static_cast<int>(rose))
                     + " for " + std::to_string(gets) + " get(s)";
  if (!why.empty())
    text += "; the consumer counted chunked/" + why;
  else
    text += " (the owner answered with chunks; see its path metrics)";
  return text;
}

std::string expect_chunked(const path_counts& before, const path_counts& after,
                           path_reason reason, int gets) {
  auto ok = static_cast<size_t>(path_reason::ok);
  auto i = static_cast<size_t>(reason);
  auto rdma = after.rdma.at(ok) - before.rdma.at(ok);
  auto rose = after.chunked.at(i) - before.chunked.at(i);
  if (rdma == 0 && rose == gets)
    return {};
  return "not the chunked path for " + std::string{to_string(reason)} + ": rdma/ok rose by "
         + std::to_string(static_cast<int>(rdma)) + ", chunked/" + to_string(reason)
         + " by " + std::to_string(static_cast<int>(rose)) + " for "
         + std::to_string(gets) + " get(s)";
}

} // namespace ferry::bench
