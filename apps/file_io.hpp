// file_io: whole-file reads and writes for the client commands. Each fails
// the command (commands.hpp: fail) with a message naming the file.
#pragma once

#include <string>

#include "protocol/byte_buffer.hpp"

namespace ferry::app {

/// The file's bytes; `command` names the command in a failure.
byte_buffer read_file(const char* command, const std::string& path);

/// Writes through a temporary file renamed into place, so a reader never
/// sees a partial file.
void write_file(const char* command, const std::string& path, const byte_buffer& bytes);

} // namespace ferry::app
