// libFuzzer target: a hello's fields from the bytes of a CAF message, as a
// gateway loads a peer's (the same order as inspect(peer_hello)), then the
// bounds check_hello applies to them. The actor handles that follow need an
// actor system to load and are left out. A field CAF loads must not cost
// more than the message's bytes (the 1 GiB RSS limit catches an allocation
// of a stated size); a hello the check accepts is within every bound and
// survives a save and a load.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "protocol/peer_hello.hpp"

namespace {

/// The hello's fields as its inspect() loads them (the UCX address with
/// its bound), without the two actor handles at the end.
template <class Inspector>
auto fields(Inspector& f, ferry::peer_hello& x) {
  ferry::bounded_bytes address{x.ucx_address, ferry::peer_hello_limits::max_ucx_address};
  return f(x.worker_id, x.incarnation, x.capabilities, address, x.host, x.port);
}

bool same(const ferry::peer_hello& a, const ferry::peer_hello& b) {
  return a.worker_id == b.worker_id && a.incarnation == b.incarnation
         && a.capabilities == b.capabilities && a.ucx_address == b.ucx_address
         && a.host == b.host && a.port == b.port;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using limits = ferry::peer_hello_limits;
  ferry::peer_hello hello;
  caf::binary_deserializer source{static_cast<caf::execution_unit*>(nullptr),
                                  reinterpret_cast<const char*>(data), size};
  if (fields(source, hello))
    return 0;
  if (ferry::check_hello_fields(hello))
    return 0;
  if (hello.worker_id == 0 || hello.ucx_address.size() > limits::max_ucx_address
      || hello.host.size() > limits::max_name
      || hello.capabilities.size() > limits::max_capabilities)
    std::abort(); // accepted out of bounds
  for (const auto& c : hello.capabilities)
    if (c.size() > limits::max_name)
      std::abort();
  std::vector<char> wire;
  caf::binary_serializer sink{static_cast<caf::execution_unit*>(nullptr), wire};
  if (fields(sink, hello))
    std::abort();
  ferry::peer_hello back;
  caf::binary_deserializer again{static_cast<caf::execution_unit*>(nullptr), wire};
  if (fields(again, back) || again.remaining() != 0 || !same(back, hello))
    std::abort();
  return 0;
}
