#include "runtime/kill_switch.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace ferry {

bool kill_switch_engaged(const char* value) {
  if (value == nullptr)
    return false;
  std::string v{value};
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

bool kill_switch_from_env() {
  return kill_switch_engaged(std::getenv(kill_switch_env));
}

} // namespace ferry
