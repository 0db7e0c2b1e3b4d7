#include "rdma/rkey_preparse.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/rdma_core/guarded_buffer.hpp"

using ferry::check_packed_rkey;
using ferry::rkey_check;

namespace {

// Builds a blob in the UCX 1.13 framing from (md index, key length) pairs.
std::vector<uint8_t> make_blob(uint64_t md_map, uint8_t mem_type,
                               const std::vector<uint8_t>& key_lens) {
  std::vector<uint8_t> b;
  for (int i = 0; i < 8; ++i)
    b.push_back(static_cast<uint8_t>(md_map >> (8 * i)));
  b.push_back(mem_type);
  uint8_t fill = 0x40;
  for (uint8_t len : key_lens) {
    b.push_back(len);
    for (uint8_t i = 0; i < len; ++i)
      b.push_back(fill++);
  }
  return b;
}

rkey_check check(const std::vector<uint8_t>& b) {
  return check_packed_rkey(b.data(), b.size());
}

// A second, deliberately plain reading of the framing, to compare against.
rkey_check reference_check(const std::vector<uint8_t>& b) {
  if (b.empty())
    return rkey_check::empty;
  if (b.size() > 1024)
    return rkey_check::too_long;
  if (b.size() < 9)
    return rkey_check::truncated;
  if (b[8] > 4)
    return rkey_check::bad_mem_type;
  size_t pos = 9;
  for (int bit = 0; bit < 64; ++bit) {
    if (((b[bit / 8] >> (bit % 8)) & 1) == 0)
      continue;
    if (pos + 1 > b.size())
      return rkey_check::truncated;
    size_t len = b[pos];
    pos += 1 + len;
    if (pos > b.size())
      return rkey_check::truncated;
  }
  return pos == b.size() ? rkey_check::ok : rkey_check::trailing_bytes;
}

} // namespace

TEST(RkeyPreparseFraming, accepts_well_formed_blobs) {
  // The dummy key UCX packs for a zero-length mapping: no domains.
  EXPECT_EQ(check(make_blob(0, 0, {})), rkey_check::ok);
  // Shapes like tcp/sm (one domain, zero-byte key) and default (two domains).
  EXPECT_EQ(check(make_blob(0x1, 0, {0})), rkey_check::ok);
  EXPECT_EQ(check(make_blob(0x5, 0, {0, 0})), rkey_check::ok);
  EXPECT_EQ(check(make_blob(0x8000000000000010ull, 0, {13, 24})),
            rkey_check::ok);
  EXPECT_EQ(check(make_blob(~0ull, 0, std::vector<uint8_t>(64, 0))),
            rkey_check::ok);
  EXPECT_EQ(check(make_blob(0x3, 0, {255, 1})), rkey_check::ok);
}

TEST(RkeyPreparseFraming, every_valid_memory_type) {
  for (uint8_t t = 0; t < ferry::ucx_memory_type_count; ++t)
    EXPECT_EQ(check(make_blob(0x1, t, {8})), rkey_check::ok) << int{t};
  for (int t = ferry::ucx_memory_type_count; t < 256; ++t)
    EXPECT_EQ(check(make_blob(0x1, static_cast<uint8_t>(t), {8})),
              rkey_check::bad_mem_type)
      << t;
}

TEST(RkeyPreparseFraming, empty_and_null) {
  EXPECT_EQ(check_packed_rkey(nullptr, 0), rkey_check::empty);
  uint8_t one = 0;
  EXPECT_EQ(check_packed_rkey(&one, 0), rkey_check::empty);
  EXPECT_EQ(check_packed_rkey(nullptr, 12), rkey_check::empty);
}

TEST(RkeyPreparseFraming, bound_is_1024_bytes) {
  // 9 + 4 length bytes + 255 * 3 + 246 = 1024 exactly.
  auto at_bound = make_blob(0xf, 0, {255, 255, 255, 246});
  ASSERT_EQ(at_bound.size(), ferry::max_ucx_rkey_bytes);
  EXPECT_EQ(check(at_bound), rkey_check::ok);
  auto over = make_blob(0xf, 0, {255, 255, 255, 247});
  ASSERT_EQ(over.size(), 1025u);
  EXPECT_EQ(check(over), rkey_check::too_long);
  std::vector<uint8_t> huge(1 << 16, 0);
  EXPECT_EQ(check(huge), rkey_check::too_long);
}

TEST(RkeyPreparseFraming, every_truncation_is_refused) {
  for (const auto& blob :
       {make_blob(0, 0, {}), make_blob(0x1, 0, {0}), make_blob(0x5, 0, {0, 0}),
        make_blob(0x12, 0, {13, 24}), make_blob(0x7, 0, {0, 30, 2})}) {
    for (size_t n = 0; n < blob.size(); ++n) {
      auto r = check_packed_rkey(blob.data(), n);
      EXPECT_EQ(r, n == 0 ? rkey_check::empty : rkey_check::truncated) << n;
    }
  }
}

TEST(RkeyPreparseFraming, trailing_bytes_are_refused) {
  for (auto blob :
       {make_blob(0, 0, {}), make_blob(0x1, 0, {0}), make_blob(0x12, 0, {3, 4})}) {
    blob.push_back(0);
    EXPECT_EQ(check(blob), rkey_check::trailing_bytes);
    blob.push_back(0xff);
    EXPECT_EQ(check(blob), rkey_check::trailing_bytes);
  }
  // The all-zero key UCX happily unpacks: md_map 0 ends the parse at 9 bytes.
  EXPECT_EQ(check(std::vector<uint8_t>(12, 0)), rkey_check::trailing_bytes);
}

TEST(RkeyPreparseFraming, key_length_running_past_the_end) {
  auto b = make_blob(0x1, 0, {10});
  b[9] = 11; // claims one more byte than present
  EXPECT_EQ(check(b), rkey_check::truncated);
  b[9] = 255;
  EXPECT_EQ(check(b), rkey_check::truncated);
  // One more domain bit than keys present.
  auto c = make_blob(0x3, 0, {4});
  EXPECT_EQ(check(c), rkey_check::truncated);
}

TEST(RkeyPreparseFraming, names_are_distinct) {
  std::set<std::string> names;
  for (auto c : {rkey_check::ok, rkey_check::empty, rkey_check::too_long,
                 rkey_check::truncated, rkey_check::bad_mem_type,
                 rkey_check::trailing_bytes})
    names.insert(to_string(c));
  EXPECT_EQ(names.size(), 6u);
  EXPECT_STREQ(to_string(rkey_check::trailing_bytes), "trailing_bytes");
}

TEST(RkeyPreparseBounds, never_reads_past_the_end) {
  ferry::test::guarded_buffer guard(2048);
  ASSERT_TRUE(guard.valid());
  auto blob = make_blob(~0ull, 0, std::vector<uint8_t>(64, 3));
  for (size_t n = 0; n <= blob.size(); ++n) {
    const uint8_t* p = guard.place(blob.data(), n);
    auto r = check_packed_rkey(p, n);
    EXPECT_EQ(r == rkey_check::ok, n == blob.size()) << n;
  }
  // Claims 64 domains with 255-byte keys while holding far fewer bytes.
  std::vector<uint8_t> liar(600, 0xff);
  liar[8] = 0;
  EXPECT_EQ(check_packed_rkey(guard.place(liar.data(), liar.size()),
                              liar.size()),
            rkey_check::truncated);
}

TEST(RkeyPreparseRandom, agrees_with_reference_on_random_bytes) {
  std::mt19937_64 rng(7);
  size_t ok = 0;
  for (int i = 0; i < 50000; ++i) {
    std::vector<uint8_t> b(rng() % 48);
    for (auto& x : b)
      x = static_cast<uint8_t>(rng());
    if (b.size() >= 9 && i % 2 == 0) {
      // Sparse md maps, a valid type and short keys reach the deeper rules.
      for (int k = 0; k < 8; ++k)
        b[k] = (rng() % 4 == 0) ? static_cast<uint8_t>(1u << (rng() % 8)) : 0;
      b[8] = static_cast<uint8_t>(rng() % 6);
      for (size_t k = 9; k < b.size(); ++k)
        b[k] = static_cast<uint8_t>(rng() % 5);
    }
    auto got = check(b);
    ASSERT_EQ(got, reference_check(b)) << i;
    ok += got == rkey_check::ok;
  }
  EXPECT_GT(ok, 0u);
}
