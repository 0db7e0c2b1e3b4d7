// ucx_status: how the UCX wrapper layer reports failure, as a value.
// Owns: ucx_error (the UCX status plus a sentence naming the call that
// failed) and ucx_result<T> (a T or a ucx_error).
// Must never: throw, or hide the ucs_status_t a failure came from.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <ucs/type/status.h>

namespace ferry {

/// A failed UCX-layer operation. `message` reads like
/// "ucp_mem_map: Out of memory" or "unpack_rkey: framing truncated".
struct ucx_error {
  ucs_status_t status = UCS_ERR_NO_MESSAGE;
  std::string message;
};

/// Builds "<what>: <detail>" for failures ferry detects itself (bad input,
/// refused framing). `status` says which UCX status it is closest to.
inline ucx_error make_ucx_error(std::string_view what, ucs_status_t status,
                                std::string_view detail) {
  ucx_error e;
  e.status = status;
  e.message.reserve(what.size() + 2 + detail.size());
  e.message.append(what).append(": ").append(detail);
  return e;
}

/// Builds "<what>: <ucs_status_string(status)>".
inline ucx_error make_ucx_error(std::string_view what, ucs_status_t status) {
  return make_ucx_error(what, status, ucs_status_string(status));
}

/// Either a T or a ucx_error. Accessing the wrong alternative is a
/// programming error and aborts (it never throws).
template <class T>
class ucx_result {
public:
  static_assert(!std::is_same_v<T, ucx_error>, "ucx_result<ucx_error>");

  ucx_result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  ucx_result(ucx_error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return *checked_value(); }
  const T& value() const& { return *checked_value(); }
  T&& value() && { return std::move(*checked_value()); }
  T* operator->() { return checked_value(); }
  const T* operator->() const { return checked_value(); }
  T& operator*() & { return *checked_value(); }
  const T& operator*() const& { return *checked_value(); }

  /// Precondition: !ok().
  const ucx_error& error() const { return *checked_error(); }
  ucs_status_t status() const noexcept {
    return ok() ? UCS_OK : std::get<1>(v_).status;
  }
  /// Empty when ok().
  const std::string& error_message() const noexcept {
    static const std::string none;
    return ok() ? none : std::get<1>(v_).message;
  }

private:
  T* checked_value() {
    if (auto* p = std::get_if<0>(&v_))
      return p;
    std::abort();
  }
  const T* checked_value() const {
    if (auto* p = std::get_if<0>(&v_))
      return p;
    std::abort();
  }
  const ucx_error* checked_error() const {
    if (auto* p = std::get_if<1>(&v_))
      return p;
    std::abort();
  }

  std::variant<T, ucx_error> v_;
};

/// Outcome of an operation that yields nothing but success or failure.
template <>
class ucx_result<void> {
public:
  ucx_result() = default;
  ucx_result(ucx_error error) : error_(std::move(error)), failed_(true) {}

  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  /// Precondition: !ok().
  const ucx_error& error() const {
    if (!failed_)
      std::abort();
    return error_;
  }
  ucs_status_t status() const noexcept {
    return failed_ ? error_.status : UCS_OK;
  }
  const std::string& error_message() const noexcept { return error_.message; }

private:
  ucx_error error_;
  bool failed_ = false;
};

using ucx_status = ucx_result<void>;

} // namespace ferry
