// ferry_gpu_peer: a node in its own process on the fake CUDA (it takes
// `ferry node`'s options: --test-fake-cuda) or the real driver, whose
// handler owns GPU payloads (device memory is filled and read back through
// direct copies, so both backends serve test.gpu_payload, test.expose,
// test.checksum and test.remote_read; the fake's own handlers need it):
//   test.gpu_payload  unary: allocates "device" memory of header "bytes",
//                     fills it with test::payload(bytes, seed), stages it
//                     with gpu_payloads::register_device and replies the
//                     handle (header "handle") and the bytes' checksum
//                     (header "checksum"); the device memory is freed after
// It also serves remote staging's source fixtures (test.expose and the
// others, bind_remote_staging_handlers below).
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>


#include "protocol/errors.hpp"
#include "protocol/checksum.hpp"
#include "runtime/gpu_payloads.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "runtime/remote_staging.hpp"
#include "staging/device_exposures.hpp"
#include "staging/direct_copy.hpp"
#include "staging/fake_cuda.hpp"
#include "actors/staging/remote_staging_stats.hpp"
#include "staging/local_stager.hpp"
#include "tests/cluster/test_peer_main.hpp"
#include "tests/cluster/test_support.hpp"

using namespace ferry;
using messenger::envelope;

namespace {

/// A host copy of `bytes` of device memory at `p`, through one direct copy
/// (on the fake or the real driver).
caf::expected<byte_buffer> host_copy_of(staging::cuda_api& api, staging::device_ptr p,
                                        size_t bytes) {
  auto ctx = api.retain_context(0);
  if (!ctx)
    return ctx.error();
  byte_buffer out(bytes);
  auto err = staging::direct_copy_plain_host(api, *ctx, staging::copy_direction::to_host, p,
                                             out.data(), out.size());
  api.release_context(0);
  if (err)
    return err;
  return out;
}

/// Device memory holding `bytes`, written through one direct copy.
caf::expected<staging::device_ptr> device_copy_of(staging::cuda_api& api,
                                                  const byte_buffer& bytes) {
  auto ctx = api.retain_context(0);
  if (!ctx)
    return ctx.error();
  api.push_context(*ctx);
  auto d = api.mem_alloc(bytes.empty() ? 1 : bytes.size());
  api.pop_context();
  caf::error err;
  if (d && !bytes.empty()) {
    byte_buffer host = bytes; // (registering needs it writable)
    err = staging::direct_copy_plain_host(api, *ctx, staging::copy_direction::to_device, *d,
                                          host.data(), host.size());
  }
  api.release_context(0);
  if (!d)
    return d.error();
  if (err)
    return err;
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

std::string hex_checksum(const void* p, size_t n) {
  return checksum_text(checksum64(p, n));
}

/// The remote staging source's fixtures:
///   test.expose        headers bytes, seed, access (read, write,
///                      read_write), kind (device, or host: plain host
///                      memory, which Pin must refuse): fills memory with
///                      test::payload(bytes, seed) and exposes it; replies
///                      "range" and "checksum"
///   test.checksum      header range: the checksum of its bytes now
///   test.staging_stat  the remote staging counters, the loans, the chunk
///                      pool's states and the fake's live native objects
///   test.fail_cuda     headers call, times: the fake fails that call
///   test.hold_events   header on (1/0): the fake's events stay not_ready
///   test.remote_read   headers range, bytes: this node, as a requester,
///                      READs the range (of another node) into device
///                      memory of its own; replies the bytes' "checksum"
caf::error bind_remote_staging_handlers(node& n, messenger_client& m) {
  struct exposed {
    staging::device_ptr memory;
    size_t bytes;
    bool on_device;
  };
  auto ranges = std::make_shared<std::map<std::string, exposed>>();
  auto host_memory = std::make_shared<std::vector<std::unique_ptr<byte_buffer>>>();
  auto mu = std::make_shared<std::mutex>();
  auto fake = [&n]() -> staging::fake_cuda& {
    return dynamic_cast<staging::fake_cuda&>(n.stager()->api());
  };
  if (auto err = m.bind("test.expose", [&n, ranges, host_memory, mu](envelope& e)
                          -> caf::expected<envelope> {
        auto bytes = std::stoull(e.hdrs["bytes"]);
        auto pattern = test::payload(bytes, std::stoull(e.hdrs["seed"]));
        staging::device_ptr p = 0;
        if (e.hdrs["kind"] == "host") {
          std::lock_guard<std::mutex> g{*mu};
          host_memory->push_back(std::make_unique<byte_buffer>(pattern));
          p = reinterpret_cast<staging::device_ptr>(host_memory->back()->data());
        } else {
          auto dev = device_copy_of(n.stager()->api(), pattern);
          if (!dev)
            return dev.error();
          p = *dev;
        }
        auto access = e.hdrs["access"] == "write"        ? staging::device_access::write
                      : e.hdrs["access"] == "read_write" ? staging::device_access::read_write
                                                         : staging::device_access::read;
        auto r = remote_staging{n}.expose(0, p, bytes, access);
        if (!r)
          return r.error();
        std::lock_guard<std::mutex> g{*mu};
        (*ranges)[to_string(*r)] = exposed{p, bytes, e.hdrs["kind"] != "host"};
        envelope out;
        out.hdrs["range"] = to_string(*r);
        out.hdrs["checksum"] = hex_checksum(pattern.data(), pattern.size());
        return out;
      }))
    return err;
  if (auto err = m.bind("test.checksum", [&n, ranges, mu](envelope& e)
                          -> caf::expected<envelope> {
        exposed x{};
        {
          std::lock_guard<std::mutex> g{*mu};
          auto i = ranges->find(e.hdrs["range"]);
          if (i == ranges->end())
            return make_error(errc::invalid_argument, "no such range");
          x = i->second;
        }
        envelope out;
        if (!x.on_device) {
          out.hdrs["checksum"] = hex_checksum(reinterpret_cast<const void*>(x.memory), x.bytes);
          return out;
        }
        auto bytes = host_copy_of(n.stager()->api(), x.memory, x.bytes);
        if (!bytes)
          return bytes.error();
        out.hdrs["checksum"] = hex_checksum(bytes->data(), bytes->size());
        return out;
      }))
    return err;
  if (auto err = m.bind("test.staging_stat", [&n](envelope&) -> caf::expected<envelope> {
        nlohmann::json j = nlohmann::json::parse(n.remote_staging()->json());
        j["loans"] = n.device_exposures()->loans();
        auto s = n.stager()->stats();
        j["chunks"] = {{"active", s.active}, {"idle", s.idle}, {"retained", s.retained},
                       {"allocations", s.allocations}};
        if (auto* f = dynamic_cast<staging::fake_cuda*>(&n.stager()->api())) {
          auto live = f->live();
          j["live"] = {{"allocations", live.allocations}, {"streams", live.streams},
                       {"events", live.events}, {"registrations", live.registrations}};
        }
        envelope out;
        out.hdrs["stat"] = j.dump();
        return out;
      }))
    return err;
  if (auto err = m.bind("test.fail_cuda", [fake](envelope& e) -> caf::expected<envelope> {
        fake().fail(e.hdrs["call"], std::stoi(e.hdrs["times"]));
        return envelope{};
      }))
    return err;
  if (auto err = m.bind("test.hold_events", [fake](envelope& e) -> caf::expected<envelope> {
        fake().hold_events(e.hdrs["on"] == "1");
        return envelope{};
      }))
    return err;
  return m.bind("test.remote_read", [&n](envelope& e) -> caf::expected<envelope> {
    auto range = parse_remote_device_range(e.hdrs["range"]);
    if (!range)
      return make_error(errc::invalid_argument, "test.remote_read: a malformed range");
    uint64_t bytes = 0;
    try {
      bytes = std::stoull(e.hdrs["bytes"]);
    } catch (const std::exception&) {
      return make_error(errc::invalid_argument, "test.remote_read: a malformed bytes");
    }
    auto& api = n.stager()->api();
    auto dst = device_copy_of(api, byte_buffer(bytes));
    if (!dst)
      return dst.error();
    auto out = remote_staging{n}.read(*range, 0, 0, *dst, bytes);
    auto got = out.error ? caf::expected<byte_buffer>{out.error} : host_copy_of(api, *dst, bytes);
    free_device(api, *dst);
    if (!got)
      return got.error();
    envelope reply;
    reply.hdrs["checksum"] = hex_checksum(got->data(), got->size());
    return reply;
  });
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
      auto hex = hex_checksum(pattern.data(), pattern.size());
      envelope out;
      out.hdrs["handle"] = to_string(*h);
      out.hdrs["checksum"] = hex;
      return out;
    });
    if (!bound)
      bound = bind_remote_staging_handlers(n, m);
    if (bound)
      std::fprintf(stderr, "bind: %s\n", describe(bound).c_str());
    return !bound;
  });
}
