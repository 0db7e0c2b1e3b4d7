#include "runtime/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace ferry {

void init_logging(const std::string& level, const std::string& role) {
  auto logger = spdlog::stderr_color_mt("ferry-" + role);
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%H:%M:%S.%e [%n %^%l%$] %v");
  spdlog::set_level(spdlog::level::from_str(level));
}

} // namespace ferry
