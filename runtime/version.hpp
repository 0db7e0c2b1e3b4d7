// version: ferry's version and those of the libraries it was built with.
#pragma once

#include <string>

namespace ferry {

/// ferry's semantic version ("0.1.0").
const char* version();

/// "ferry 0.1.0 (CAF 0.17.6, UCX 1.13.1)": what `ferry --version` prints.
std::string version_text();

} // namespace ferry
