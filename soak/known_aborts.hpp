// known_aborts: the deaths of a node process inside a library ferry runs on
// that ferry can neither catch nor prevent, told apart by what the process
// wrote as it died (docs/known-issues.md has each, with what ferry does to
// narrow it). A soak counts such a death like a kill: the node is
// restarted, operations on it are survived, and the rest of the cluster
// must still lose and leak nothing. It is reported apart from the
// violations. Any other death stays a violation.
// Must never: match a death whose log lacks the library's own frames.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ferry::soak {

/// The known library abort `log` (a dead node's log, its end at least)
/// shows, by its known-issues title, or nothing.
std::optional<std::string> known_library_abort(std::string_view log);

} // namespace ferry::soak
