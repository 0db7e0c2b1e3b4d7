// Links against the installed ferry::ferry and prints its version line
// (the test matches it against the package's version).
#include <cstdio>

#include <ferry/ferry.hpp>

int main() {
  std::printf("%s\n", ferry::version_text().c_str());
  return 0;
}
