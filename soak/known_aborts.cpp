#include "soak/known_aborts.hpp"

#include <signal.h>

#include <array>

namespace ferry::soak {

namespace {

/// One abort: how the process died, UCX's message as it prints it, and the
/// library frame the backtrace after it must reach.
struct signature {
  const char* entry;     // its docs/known-issues.md entry
  int signal;            // what ended the process
  const char* message;   // UCX's own line (its assert, fatal or signal text)
  const char* detail;    // more of that line, or nullptr
  const char* frame;     // the library function in the backtrace
  const char* not_above; // a library no frame above `frame` may be in, or nullptr
};

constexpr std::array<signature, 4> signatures{{
  {"UCX 1.13.1: a peer that dies while its endpoint wires up over tcp can crash the "
   "other side (the purge of a failed tcp endpoint, an assertion in UCX's stubs)",
   SIGABRT, "Assertion `0' failed", "stubs.c:", "uct_tcp_ep_pending_purge", nullptr},
  {"UCX 1.13.1: a peer that dies while its endpoint wires up over tcp can crash the "
   "other side (a wireup reply in the purged queue)",
   SIGABRT, "Assertion `(req->send.wireup.type", "ucp_request.c:", "uct_tcp_ep_pending_purge",
   nullptr},
  {"Found by the 30-minute soak: UCX 1.13, a failed reply to a GET is fatal "
   "(ucp_get_req_handler)",
   SIGABRT, "Fatal: unexpected error: Endpoint timeout", "ucp_request.inl:",
   "ucp_get_req_handler", nullptr},
  // Inside UCT's own handling of a socket event: no UCP code (a GET served
  // from memory ferry let go would be ucp_get_req_handler's) and no ferry
  // code (an active message's handler) above it.
  {"UCX 1.13.1: a tcp endpoint's socket event handled after the endpoint went "
   "(a jump through its freed state)",
   SIGSEGV, "Caught signal 11 (Segmentation fault", nullptr, "uct_tcp_iface_progress",
   "libucp"},
}};

/// A frame line of ferry's own code: the ferry binary or a library of it.
bool ferry_frame(std::string_view line) {
  return line.find("/ferry(") != std::string_view::npos
         || line.find("libferry") != std::string_view::npos;
}

/// The line of `log` that holds `pos` (without its newline).
std::string_view line_at(std::string_view log, size_t pos) {
  auto start = log.rfind('\n', pos);
  start = start == std::string_view::npos ? 0 : start + 1;
  auto end = log.find('\n', pos);
  return log.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

/// Whether `log` has `s`'s message and, in the backtrace after it, `s`'s
/// frame with no frame of ferry's before it.
bool shows(std::string_view log, const signature& s) {
  auto at = log.find(s.message);
  if (at == std::string_view::npos)
    return false;
  if (s.detail && line_at(log, at).find(s.detail) == std::string_view::npos)
    return false;
  auto trace = log.find("==== backtrace", at);
  if (trace == std::string_view::npos)
    return false;
  for (auto pos = trace; pos < log.size();) {
    auto frame = line_at(log, pos);
    if (frame.find(s.frame) != std::string_view::npos)
      return true;
    if (ferry_frame(frame) || frame.rfind("=================", 0) == 0
        || (s.not_above && frame.find(s.not_above) != std::string_view::npos))
      return false; // ferry's code (or a library ruled out) is above it, or the trace ended
    pos += frame.size() + 1;
  }
  return false;
}

} // namespace

std::optional<std::string> known_library_abort(std::string_view log, int signal) {
  for (const auto& s : signatures)
    if (s.signal == signal && shows(log, s))
      return std::string{s.entry};
  return std::nullopt;
}

} // namespace ferry::soak
