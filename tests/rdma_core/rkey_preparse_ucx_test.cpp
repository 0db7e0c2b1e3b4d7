// Real UCX 1.13 packed keys against the pre-parse. This file is the only part
// of the rdma_core tests that links UCX.
#include "rdma/rkey_preparse.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/rdma_core/guarded_buffer.hpp"

using ferry::check_packed_rkey;
using ferry::rkey_check;

static_assert(UCP_API_MAJOR == 1 && UCP_API_MINOR == 13,
              "the packed-rkey framing was verified for UCX 1.13 only");
static_assert(UCS_MEMORY_TYPE_LAST == ferry::ucx_memory_type_count,
              "ucx_memory_type_count must match ucs/memory/memory_type.h");

namespace {

constexpr size_t map_bytes = 1 << 20;

// One UCP context + worker built with a given UCX_TLS (empty: UCX default).
class ucx_instance {
public:
  explicit ucx_instance(const std::string& tls) {
    ucp_config_t* cfg = nullptr;
    if (ucp_config_read(nullptr, nullptr, &cfg) != UCS_OK)
      return;
    bool cfg_ok = ucp_config_modify(cfg, "NET_DEVICES", "lo") == UCS_OK;
    if (!tls.empty())
      cfg_ok = cfg_ok && ucp_config_modify(cfg, "TLS", tls.c_str()) == UCS_OK;
    ucp_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_RMA;
    const bool init_ok = cfg_ok && ucp_init(&params, cfg, &context_) == UCS_OK;
    ucp_config_release(cfg);
    if (!init_ok) {
      context_ = nullptr;
      return;
    }
    ucp_worker_params_t wp;
    std::memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(context_, &wp, &worker_) != UCS_OK)
      worker_ = nullptr;
  }

  ~ucx_instance() {
    if (ep_ != nullptr) {
      ucp_request_param_t p;
      std::memset(&p, 0, sizeof(p));
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* req = ucp_ep_close_nbx(ep_, &p);
      if (req != nullptr && !UCS_PTR_IS_ERR(req)) {
        for (int i = 0; i < 100000
                        && ucp_request_check_status(req) == UCS_INPROGRESS;
             ++i)
          ucp_worker_progress(worker_);
        ucp_request_free(req);
      }
    }
    if (worker_ != nullptr)
      ucp_worker_destroy(worker_);
    if (context_ != nullptr)
      ucp_cleanup(context_);
  }

  ucx_instance(const ucx_instance&) = delete;
  ucx_instance& operator=(const ucx_instance&) = delete;

  bool valid() const {
    return context_ != nullptr && worker_ != nullptr;
  }
  ucp_context_h context() const {
    return context_;
  }

  // An endpoint from the worker to itself, so keys can be unpacked in-process.
  ucp_ep_h loopback() {
    if (ep_ != nullptr || !valid())
      return ep_;
    ucp_address_t* addr = nullptr;
    size_t addr_len = 0;
    if (ucp_worker_get_address(worker_, &addr, &addr_len) != UCS_OK)
      return nullptr;
    ucp_ep_params_t ep;
    std::memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = addr;
    if (ucp_ep_create(worker_, &ep, &ep_) != UCS_OK)
      ep_ = nullptr;
    ucp_worker_release_address(worker_, addr);
    return ep_;
  }

private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
};

enum class mapping { user, ucx_allocate, zero_length };

const char* name(mapping m) {
  switch (m) {
    case mapping::user:
      return "user";
    case mapping::ucx_allocate:
      return "UCP_MEM_MAP_ALLOCATE";
    case mapping::zero_length:
      return "zero-length";
  }
  return "?";
}

// A live mapping and its packed key; unmaps on destruction.
class packed_key {
public:
  packed_key(ucp_context_h ctx, mapping how) : ctx_(ctx) {
    ucp_mem_map_params_t mp;
    std::memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS
                    | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.length = how == mapping::zero_length ? 0 : map_bytes;
    if (how == mapping::ucx_allocate) {
      mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
      mp.flags = UCP_MEM_MAP_ALLOCATE;
    } else if (how == mapping::user) {
      void* p = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return;
      user_ = p;
      mp.address = p;
    }
    if (ucp_mem_map(ctx_, &mp, &memh_) != UCS_OK) {
      memh_ = nullptr;
      return;
    }
    void* rkey = nullptr;
    size_t rkey_len = 0;
    if (ucp_rkey_pack(ctx_, memh_, &rkey, &rkey_len) == UCS_OK) {
      auto* p = static_cast<const uint8_t*>(rkey);
      bytes.assign(p, p + rkey_len);
      ok = true;
      ucp_rkey_buffer_release(rkey);
    }
  }
  ~packed_key() {
    if (memh_ != nullptr)
      ucp_mem_unmap(ctx_, memh_);
    if (user_ != nullptr)
      munmap(user_, map_bytes);
  }
  packed_key(const packed_key&) = delete;
  packed_key& operator=(const packed_key&) = delete;

  std::vector<uint8_t> bytes;
  bool ok = false;

private:
  ucp_context_h ctx_;
  ucp_mem_h memh_ = nullptr;
  void* user_ = nullptr;
};

std::string hex(const std::vector<uint8_t>& b) {
  std::string s;
  char buf[4];
  for (uint8_t x : b) {
    std::snprintf(buf, sizeof(buf), "%02x", x);
    s += buf;
  }
  return s;
}

// The checks every real key must pass.
void check_real_key(const std::vector<uint8_t>& key, const std::string& what) {
  SCOPED_TRACE(what + " key=" + hex(key));
  ASSERT_GE(key.size(), ferry::ucx_rkey_fixed_bytes);
  EXPECT_EQ(check_packed_rkey(key.data(), key.size()), rkey_check::ok);
  // Every shorter length is refused.
  for (size_t n = 0; n < key.size(); ++n)
    EXPECT_EQ(check_packed_rkey(key.data(), n),
              n == 0 ? rkey_check::empty : rkey_check::truncated)
      << "prefix " << n;
  // UCX's parse stops at the last key, so one more byte is never consumed.
  auto longer = key;
  longer.push_back(0);
  EXPECT_EQ(check_packed_rkey(longer.data(), longer.size()),
            rkey_check::trailing_bytes);
  // Memory types outside 1.13's enum.
  for (int t = UCS_MEMORY_TYPE_LAST; t < 256; ++t) {
    auto bad = key;
    bad[8] = static_cast<uint8_t>(t);
    EXPECT_EQ(check_packed_rkey(bad.data(), bad.size()),
              rkey_check::bad_mem_type)
      << t;
  }
  // Flipping a bit of the md map changes how much UCX would read.
  for (int bit = 0; bit < 64; ++bit) {
    auto flipped = key;
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(check_packed_rkey(flipped.data(), flipped.size()),
              rkey_check::ok)
      << "md bit " << bit;
  }
}

struct tls_case {
  const char* tls; // "" = UCX default
};

class RkeyPreparseUcx : public ::testing::TestWithParam<tls_case> {};

TEST_P(RkeyPreparseUcx, real_keys_pass_and_their_mutations_fail) {
  const std::string tls = GetParam().tls;
  ucx_instance ucx(tls);
  if (!ucx.valid())
    GTEST_SKIP() << "UCX context with TLS='" << tls << "' not available here";
  for (mapping how : {mapping::user, mapping::ucx_allocate, mapping::zero_length}) {
    packed_key key(ucx.context(), how);
    const std::string what = "TLS='" + tls + "' " + name(how);
    if (!key.ok) {
      // Not every transport set can allocate; the user mapping must work.
      EXPECT_NE(how, mapping::user) << what;
      std::printf("[ rkey     ] %-40s mem_map/pack refused\n", what.c_str());
      continue;
    }
    std::printf("[ rkey     ] %-40s %3zu bytes %s\n", what.c_str(),
                key.bytes.size(), hex(key.bytes).c_str());
    check_real_key(key.bytes, what);
    if (how == mapping::zero_length) {
      // The dummy key of a zero-length mapping: no domains, host memory.
      EXPECT_EQ(key.bytes, std::vector<uint8_t>(9, 0)) << what;
    }
  }
}

// UCX itself reads no byte after a blob the pre-parse accepts: the blob ends
// right before an inaccessible page and ucp_ep_rkey_unpack does not fault.
TEST_P(RkeyPreparseUcx, unpack_reads_nothing_past_an_accepted_blob) {
  const std::string tls = GetParam().tls;
  ucx_instance ucx(tls);
  if (!ucx.valid())
    GTEST_SKIP() << "UCX context with TLS='" << tls << "' not available here";
  ucp_ep_h ep = ucx.loopback();
  if (ep == nullptr)
    GTEST_SKIP() << "no loopback endpoint with TLS='" << tls << "'";
  ferry::test::guarded_buffer guard(ferry::max_ucx_rkey_bytes);
  ASSERT_TRUE(guard.valid());
  for (mapping how : {mapping::user, mapping::ucx_allocate}) {
    packed_key key(ucx.context(), how);
    if (!key.ok)
      continue;
    ASSERT_EQ(check_packed_rkey(key.bytes.data(), key.bytes.size()),
              rkey_check::ok);
    const uint8_t* at_edge = guard.place(key.bytes.data(), key.bytes.size());
    ucp_rkey_h rkey = nullptr;
    const ucs_status_t st = ucp_ep_rkey_unpack(ep, at_edge, &rkey);
    EXPECT_EQ(st, UCS_OK) << name(how) << ": " << ucs_status_string(st);
    if (st == UCS_OK)
      ucp_rkey_destroy(rkey);
  }
}

INSTANTIATE_TEST_SUITE_P(
  Transports, RkeyPreparseUcx,
  ::testing::Values(tls_case{""}, tls_case{"tcp"}, tls_case{"sm"},
                    tls_case{"self"}, tls_case{"posix"}, tls_case{"sysv"},
                    tls_case{"posix,cma"}, tls_case{"tcp,sysv"},
                    tls_case{"self,tcp,posix,sysv,cma"}),
  [](const ::testing::TestParamInfo<tls_case>& info) {
    std::string n = info.param.tls[0] == '\0' ? "default" : info.param.tls;
    for (auto& c : n)
      if (c == ',')
        c = '_';
    return n;
  });

} // namespace
