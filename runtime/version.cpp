#include "runtime/version.hpp"

#include <caf/config.hpp>

#ifdef FERRY_WITH_UCX
#include <ucp/api/ucp.h>
#endif

namespace ferry {

const char* version() {
  return FERRY_VERSION; // the project's version, from CMake
}

std::string version_text() {
  std::string out = std::string{"ferry "} + version() + " (CAF "
                    + std::to_string(CAF_MAJOR_VERSION) + "."
                    + std::to_string(CAF_MINOR_VERSION) + "."
                    + std::to_string(CAF_PATCH_VERSION);
#ifdef FERRY_WITH_UCX
  out += std::string{", UCX "} + ucp_get_version_string();
#else
  out += ", without UCX";
#endif
  return out + ")";
}

} // namespace ferry
