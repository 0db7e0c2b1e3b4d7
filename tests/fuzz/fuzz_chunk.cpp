// libFuzzer target: loading a chunk (chunk_bytes) from the bytes of a CAF
// message, as a consumer does with an owner's _rv_pull answer. A stated
// length past the message's bytes must be refused before anything of that
// length is allocated (a 1 GiB RSS limit makes an allocation of the stated
// size fail the run); an accepted chunk must survive a save and a load.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "protocol/chunk_bytes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ferry::chunk_bytes chunk;
  caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr),
                                  reinterpret_cast<const char*>(data), size};
  if (auto err = source(chunk))
    return 0;
  if (chunk.size() > size)
    std::abort(); // more bytes than the message had
  // Saved and loaded again, the chunk holds the same bytes (CAF's length
  // prefix may be written shorter than a peer wrote it).
  std::vector<char> wire;
  caf::binary_serializer sink{static_cast<caf::execution_unit*>(nullptr), wire};
  if (sink(chunk))
    std::abort();
  ferry::chunk_bytes back;
  caf::binary_deserializer again{static_cast<caf::execution_unit*>(nullptr), wire};
  if (again(back) || again.remaining() != 0 || back.size() != chunk.size()
      || (chunk.size() > 0 && std::memcmp(back.data(), chunk.data(), chunk.size()) != 0))
    std::abort();
  return 0;
}
