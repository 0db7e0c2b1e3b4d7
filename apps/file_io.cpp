#include "apps/file_io.hpp"

#include <cstdio>
#include <fstream>

#include "apps/commands.hpp"

namespace ferry::app {

byte_buffer read_file(const char* command, const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    fail(command, "cannot open '" + path + "'");
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0)
    fail(command, "cannot size '" + path + "' (not a regular file?)");
  byte_buffer bytes(static_cast<size_t>(size));
  if (!in.read(bytes.data(), size))
    fail(command, "cannot read '" + path + "'");
  return bytes;
}

void write_file(const char* command, const std::string& path, const byte_buffer& bytes) {
  auto tmp = path + ".ferry-partial";
  {
    std::ofstream out{tmp, std::ios::binary | std::ios::trunc};
    if (!out)
      fail(command, "cannot create '" + tmp + "'");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      fail(command, "cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail(command, "cannot rename '" + tmp + "' to '" + path + "'");
}

} // namespace ferry::app
