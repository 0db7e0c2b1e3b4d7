// known_aborts: the deaths of a node process inside a library ferry runs on
// that ferry can neither catch nor prevent, told apart by what the process
// wrote as it died (docs/known-issues.md has each, with what ferry does to
// narrow it). A soak counts such a death like a kill: the node is
// restarted, operations on it are survived, and the rest of the cluster
// must still lose and leak nothing. It is reported apart from the
// violations. Any other death stays a violation.
// Must never: match a death by another signal than the abort's, one whose
// log lacks the library's exact message followed by a backtrace through the
// library's own frame, or one with a frame of ferry's above that frame
// (ferry's code called from the library, such as a send's completion
// callback).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::soak {

/// How much of a dead node's log to read for its backtrace (a report
/// shows less).
constexpr size_t death_log_chars = 16000;

/// The known library abort that `log` (a dead node's log, its end at
/// least) shows, named by its docs/known-issues.md entry, or nothing.
/// `signal` ended the process (0: it exited); each abort has its own.
std::optional<std::string> known_library_abort(std::string_view log, int signal);

} // namespace ferry::soak
