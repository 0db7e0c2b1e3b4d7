// ferry's error codes and their conversion to caf::error.
// Owns: the error enum every layer returns. Must never: throw, or carry
// anything but a code and a human-readable context across the wire.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <caf/atom.hpp>
#include <caf/error.hpp>

namespace ferry {

enum class errc : uint8_t {
  none = 0,
  malformed_body,      // a control-plane body that does not parse
  unknown_handle,      // no slot for this handle on its owner
  unknown_lease,       // lease id not held on this slot (e.g. released twice)
  unknown_transfer,    // pull names a transfer that does not exist
  chunk_out_of_range,  // pull past the last chunk
  unknown_owner,       // the handle's owner is not a known peer
  peer_down,           // the peer died while an operation was outstanding
  timeout,             // a bound ran out
  payload_too_large,   // over staged_payload_max or a caller buffer
  protocol_violation,  // a peer broke the protocol (wrong chunk size, ...)
  draining,            // the node is shutting down
  io_error,            // local file or socket error
  invalid_argument,    // bad input from a user
  unknown_worker_type, // spawn of a worker name nobody registered
  budget_exhausted,    // the registered-bytes budget is spent
  pool_exhausted,      // the arena pool cannot give memory
  get_failed,          // a UCX GET failed
  descriptor_refused,  // an RDMA descriptor or its key does not decode
  get_abandoned,       // a GET given up that UCX may still write (destination lent)
  unknown_handler,     // a messenger call names a handler nobody bound
  handler_failed,      // a messenger handler answered an error
  stream_ended,        // a stream was ended by its other side or its limit
  resource_exhausted,  // a bounded pool (staging chunks) has nothing free now
  cuda_error,          // a CUDA call failed (the text names the call)
  staging_unavailable, // no CUDA driver or device: GPU staging is off
  cancelled,           // the requester cancelled before the work started
  not_registered,      // a call that needs a hello first (membership, lookup)
  no_channel,          // the control channel has no such peer: nothing was sent
  internal_error,      // an exception inside ferry ended the work (a bug; the text names it)
};

/// The highest code (what a peer's error answer may carry).
inline constexpr errc errc_last = errc::internal_error;

/// The CAF error category ferry's codes live in.
constexpr caf::atom_value error_category = caf::atom("ferry");

std::string to_string(errc code);

/// A caf::error in ferry's category; `context` says what went wrong.
caf::error make_error(errc code, std::string context = {});

/// Human-readable text for any error (ferry's, CAF's, or none).
std::string describe(const caf::error& err);

/// True when `err` is ferry's `code`.
bool is(const caf::error& err, errc code);

/// The error as ferry's code and its context text, for a wire that carries
/// no CAF error (the control channel): an error of another category becomes
/// io_error with its description as the text.
std::pair<errc, std::string> code_and_text(const caf::error& err);

} // namespace ferry
