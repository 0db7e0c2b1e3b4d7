#include "rdma/control_protocol.hpp"

namespace ferry {

const char* to_string(control_drop d) noexcept {
  switch (d) {
    case control_drop::malformed:
      return "malformed";
    case control_drop::unknown_peer:
      return "unknown_peer";
    case control_drop::bad_token:
      return "bad_token";
    case control_drop::unknown_call:
      return "unknown_call";
    case control_drop::wrong_peer:
      return "wrong_peer";
    case control_drop::wrong_op:
      return "wrong_op";
    case control_drop::bad_error_body:
      return "bad_error_body";
  }
  return "unknown";
}

const char* to_string(control_call_refusal r) noexcept {
  switch (r) {
    case control_call_refusal::unknown_peer:
      return "unknown_peer";
    case control_call_refusal::too_many:
      return "too_many";
    case control_call_refusal::body_too_long:
      return "body_too_long";
  }
  return "unknown";
}

} // namespace ferry
