#include "protocol/errors.hpp"

#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace ferry {

std::string to_string(errc code) {
  switch (code) {
    case errc::none: return "none";
    case errc::malformed_body: return "malformed_body";
    case errc::unknown_handle: return "unknown_handle";
    case errc::unknown_lease: return "unknown_lease";
    case errc::unknown_transfer: return "unknown_transfer";
    case errc::chunk_out_of_range: return "chunk_out_of_range";
    case errc::unknown_owner: return "unknown_owner";
    case errc::peer_down: return "peer_down";
    case errc::timeout: return "timeout";
    case errc::payload_too_large: return "payload_too_large";
    case errc::protocol_violation: return "protocol_violation";
    case errc::draining: return "draining";
    case errc::io_error: return "io_error";
    case errc::invalid_argument: return "invalid_argument";
    case errc::unknown_worker_type: return "unknown_worker_type";
    case errc::budget_exhausted: return "budget_exhausted";
    case errc::pool_exhausted: return "pool_exhausted";
    case errc::get_failed: return "get_failed";
    case errc::descriptor_refused: return "descriptor_refused";
    case errc::get_abandoned: return "get_abandoned";
    case errc::unknown_handler: return "unknown_handler";
    case errc::handler_failed: return "handler_failed";
    case errc::stream_ended: return "stream_ended";
    case errc::resource_exhausted: return "resource_exhausted";
    case errc::cuda_error: return "cuda_error";
    case errc::staging_unavailable: return "staging_unavailable";
    case errc::cancelled: return "cancelled";
    case errc::not_registered: return "not_registered";
    case errc::no_channel: return "no_channel";
    case errc::internal_error: return "internal_error";
  }
  return "errc(" + std::to_string(static_cast<int>(code)) + ")";
}

caf::error make_error(errc code, std::string context) {
  if (context.empty())
    return caf::error{static_cast<uint8_t>(code), error_category};
  return caf::error{static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(context))};
}

namespace {

std::string context_text(const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  if (ctx.empty())
    return {};
  return to_string(ctx);
}

} // namespace

std::string describe(const caf::error& err) {
  if (!err)
    return "no error";
  std::string result;
  if (err.category() == error_category)
    result = to_string(static_cast<errc>(err.code()));
  else if (err.category() == caf::atom("system"))
    result = to_string(static_cast<caf::sec>(err.code()));
  else
    result = to_string(err.category()) + ":" + std::to_string(err.code());
  auto ctx = context_text(err);
  if (!ctx.empty())
    result += ": " + ctx;
  return result;
}

bool is(const caf::error& err, errc code) {
  // CAF 0.17's category() of an empty error reads through a null pointer.
  return err && err.category() == error_category
         && err.code() == static_cast<uint8_t>(code);
}

std::pair<errc, std::string> code_and_text(const caf::error& err) {
  if (err.category() == error_category && err.code() != 0)
    return {static_cast<errc>(err.code()), context_text(err)};
  return {errc::io_error, describe(err)};
}

} // namespace ferry
