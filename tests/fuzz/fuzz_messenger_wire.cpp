// libFuzzer target: a messenger envelope (handler name, headers, payload)
// loaded from the bytes of a CAF message, as a messenger loads a peer's
// call, reply or stream item. Every stated length is bounded before it is
// allocated: by the bytes the message still holds, so the run's 64 MiB
// malloc limit (tests/fuzz/CMakeLists.txt) fails it on an allocation of a
// stated size, which could be up to 256 MiB and fail only on the read
// after it. An envelope that loads is within every bound check_envelope
// applies to a local one, and survives a save and a load unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "protocol/messenger_wire.hpp"

namespace {

bool same(const ferry::messenger::envelope& a, const ferry::messenger::envelope& b) {
  return a.handler == b.handler && a.hdrs == b.hdrs && a.payload == b.payload;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using limits = ferry::messenger::envelope_limits;
  ferry::messenger::envelope env;
  caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr),
                                  reinterpret_cast<const char*>(data), size};
  if (source(env))
    return 0;
  // A sanity check: what loaded cannot hold more bytes than the message had.
  size_t held = env.handler.size() + env.payload.size();
  for (const auto& [k, v] : env.hdrs)
    held += k.size() + v.size();
  if (held > size)
    std::abort();
  if (!ferry::messenger::check_envelope(env).empty())
    std::abort(); // a peer's envelope accepted past a bound a local one has
  if (env.hdrs.size() > limits::max_headers)
    std::abort();
  std::vector<char> wire;
  caf::binary_serializer sink{static_cast<caf::execution_unit*>(nullptr), wire};
  if (sink(env))
    std::abort();
  ferry::messenger::envelope back;
  caf::binary_deserializer again{static_cast<caf::execution_unit*>(nullptr), wire};
  if (again(back) || again.remaining() != 0 || !same(back, env))
    std::abort();
  return 0;
}
