// ferry_gpu_peer: a node in its own process on the fake CUDA (it takes
// `ferry node`'s options; run it with --test-fake-cuda) whose handler owns
// GPU payloads:
//   test.gpu_payload  unary: allocates "device" memory of header "bytes",
//                     fills it with test::payload(bytes, seed), stages it
//                     with gpu_payloads::register_device and replies the
//                     handle (header "handle") and the bytes' checksum
//                     (header "checksum"); the device memory is freed after
#include <cstdio>
#include <cstring>


#include "protocol/errors.hpp"
#include "protocol/checksum.hpp"
#include "runtime/gpu_payloads.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "staging/local_stager.hpp"
#include "tests/cluster/test_peer_main.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using messenger::envelope;

namespace {

/// Device memory of the fake holding `bytes`: the fake's device memory is
/// real host memory, so the fixture writes it directly.
caf::expected<staging::device_ptr> device_copy_of(staging::cuda_api& api,
                                                  const byte_buffer& bytes) {
  auto ctx = api.retain_context(0);
  if (!ctx)
    return ctx.error();
  api.push_context(*ctx);
  auto d = api.mem_alloc(bytes.empty() ? 1 : bytes.size());
  api.pop_context();
  api.release_context(0);
  if (d)
    std::memcpy(reinterpret_cast<void*>(*d), bytes.data(), bytes.size());
  return d;
}

void free_device(staging::cuda_api& api, staging::device_ptr d) {
  auto ctx = api.retain_context(0);
  if (!ctx)
    return;
  api.push_context(*ctx);
  api.mem_free(d);
  api.pop_context();
  api.release_context(0);
}

} // namespace

int main(int argc, char** argv) {
  return test::run_test_peer(argc, argv,
                             "ferry_gpu_peer: a node owning GPU payloads on the fake CUDA",
                             [](node& n) {
    messenger_client m{n};
    auto bound = m.bind("test.gpu_payload", [&n](envelope& e) -> caf::expected<envelope> {
      auto bytes = std::stoull(e.hdrs["bytes"]);
      auto seed = std::stoull(e.hdrs["seed"]);
      auto pattern = test::payload(bytes, seed);
      auto& api = n.stager()->api();
      auto dev = device_copy_of(api, pattern);
      if (!dev)
        return dev.error();
      auto h = gpu_payloads{n}.register_device(0, *dev, bytes);
      free_device(api, *dev);
      if (!h)
        return h.error();
      char hex[19];
      std::snprintf(hex, sizeof hex, "0x%016llx",
                    static_cast<unsigned long long>(
                      checksum64(pattern.data(), pattern.size())));
      envelope out;
      out.hdrs["handle"] = to_string(*h);
      out.hdrs["checksum"] = hex;
      return out;
    });
    if (bound)
      std::fprintf(stderr, "bind: %s\n", describe(bound).c_str());
    return !bound;
  });
}
