#include "runtime/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "protocol/errors.hpp"
#include "runtime/json_log_format.hpp"

namespace ferry {

caf::error init_logging(const std::string& level, const std::string& role,
                        const std::string& format) {
  auto name = "ferry-" + role;
  auto logger = spdlog::get(name);
  if (!logger)
    logger = spdlog::stderr_color_mt(name);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<json_log_formatter>());
    return caf::none;
  }
  spdlog::set_pattern("%H:%M:%S.%e [%n %^%l%$] %v");
  if (format != "text")
    return make_error(errc::invalid_argument,
                      "--log-format: '" + format + "' is neither text nor json");
  return caf::none;
}

} // namespace ferry
