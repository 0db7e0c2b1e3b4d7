#include "soak/known_aborts.hpp"

#include <array>
#include <initializer_list>

namespace ferry::soak {

namespace {

/// One abort: every mark must be in the log (the library's message and a
/// frame of its own backtrace), so a crash in ferry's code never matches.
struct signature {
  const char* title; // its entry in docs/known-issues.md
  std::initializer_list<const char*> marks;
};

const std::array<signature, 2>& signatures() {
  static const std::array<signature, 2> all{{
    {"UCX 1.13.1: a failed reply to an emulated GET is fatal (ucp_get_req_handler)",
     {"Fatal: unexpected error: Endpoint timeout", "ucp_get_req_handler"}},
    {"UCX 1.13.1: purging a failed tcp endpoint's pending queue asserts "
     "(uct_tcp_ep_pending_purge)",
     {"Assertion", "uct_tcp_ep_pending_purge"}},
  }};
  return all;
}

} // namespace

std::optional<std::string> known_library_abort(std::string_view log) {
  for (const auto& s : signatures()) {
    bool all = true;
    for (const char* mark : s.marks)
      all = all && log.find(mark) != std::string_view::npos;
    if (all)
      return std::string{s.title};
  }
  return std::nullopt;
}

} // namespace ferry::soak
