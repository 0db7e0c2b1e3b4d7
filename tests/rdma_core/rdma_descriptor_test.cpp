#include "protocol/rdma_descriptor.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>

#include "tests/rdma_core/guarded_buffer.hpp"

using ferry::decode_descriptor;
using ferry::descriptor_refusal;
using ferry::encode_descriptor;
using ferry::rdma_descriptor;

namespace {

rdma_descriptor sample(size_t rkey_len = 12) {
  rdma_descriptor d;
  d.generation = 0x0102030405060708ull;
  d.addr = 0x00007f00deadbeefull;
  d.len = 1u << 20;
  d.rkey.resize(rkey_len);
  for (size_t i = 0; i < rkey_len; ++i)
    d.rkey[i] = static_cast<uint8_t>(i * 7 + 1);
  return d;
}

descriptor_refusal refusal_of(const std::vector<uint8_t>& bytes) {
  auto r = decode_descriptor(bytes.data(), bytes.size());
  EXPECT_FALSE(r.ok());
  return r.refusal;
}

} // namespace

TEST(RdmaDescriptorCodec, golden_layout_is_little_endian) {
  rdma_descriptor d;
  d.generation = 0x0102030405060708ull;
  d.addr = 0x1112131415161718ull;
  d.len = 0x2122232425262728ull;
  d.rkey = {0xaa, 0xbb, 0xcc};
  const std::vector<uint8_t> want = {
    0x01, 0x01, 0x00,                                // backend, version, flags
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // generation
    0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,  // addr
    0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,  // len
    0x03, 0x00,                                      // rkey_len
    0xaa, 0xbb, 0xcc};
  EXPECT_EQ(encode_descriptor(d), want);
  EXPECT_EQ(ferry::descriptor_header_bytes, 29u);
  auto r = decode_descriptor(want.data(), want.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r.descriptor, d);
}

TEST(RdmaDescriptorCodec, round_trips_every_key_size_class) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{12}, size_t{35}, size_t{255},
                   size_t{256}, size_t{1024}, size_t{4095}, size_t{4096}}) {
    auto d = sample(n);
    auto bytes = encode_descriptor(d);
    ASSERT_EQ(bytes.size(), 29 + n);
    auto r = decode_descriptor(bytes.data(), bytes.size());
    ASSERT_TRUE(r.ok()) << n << ": " << to_string(r.refusal);
    EXPECT_EQ(*r.descriptor, d);
    EXPECT_EQ(encode_descriptor(*r.descriptor), bytes);
  }
}

TEST(RdmaDescriptorCodec, extreme_field_values_round_trip) {
  auto d = sample(4);
  d.generation = ~0ull;
  d.addr = 0;
  d.len = ~0ull; // the whole range below 2^64
  auto bytes = encode_descriptor(d);
  auto whole = decode_descriptor(bytes.data(), bytes.size());
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole.descriptor, d);
  d.addr = ~0ull - 1; // the last byte below 2^64
  d.len = 1;
  bytes = encode_descriptor(d);
  auto r = decode_descriptor(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r.descriptor, d);
  d.len = 1;
  d.addr = 0;
  d.generation = 0;
  bytes = encode_descriptor(d);
  r = decode_descriptor(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r.descriptor, d);
}

TEST(RdmaDescriptorRefusal, too_short_below_header) {
  auto bytes = encode_descriptor(sample(0));
  ASSERT_EQ(bytes.size(), 29u);
  for (size_t n = 0; n < 29; ++n) {
    auto r = decode_descriptor(bytes.data(), n);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.refusal, descriptor_refusal::too_short) << n;
  }
  auto r = decode_descriptor(nullptr, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.refusal, descriptor_refusal::too_short);
  EXPECT_FALSE(decode_descriptor(nullptr, 100).ok());
}

TEST(RdmaDescriptorRefusal, unknown_backend_and_version) {
  auto bytes = encode_descriptor(sample());
  for (int v : {0, 2, 3, 0x80, 0xff}) {
    auto b = bytes;
    b[0] = static_cast<uint8_t>(v);
    EXPECT_EQ(refusal_of(b), descriptor_refusal::unknown_backend) << v;
    b = bytes;
    b[1] = static_cast<uint8_t>(v);
    EXPECT_EQ(refusal_of(b), descriptor_refusal::unknown_version) << v;
  }
}

TEST(RdmaDescriptorRefusal, every_flag_bit) {
  auto bytes = encode_descriptor(sample());
  for (int bit = 0; bit < 8; ++bit) {
    auto b = bytes;
    b[2] = static_cast<uint8_t>(1u << bit);
    EXPECT_EQ(refusal_of(b), descriptor_refusal::nonzero_flags) << bit;
  }
}

TEST(RdmaDescriptorRefusal, zero_len) {
  auto bytes = encode_descriptor(sample());
  std::memset(bytes.data() + 19, 0, 8);
  EXPECT_EQ(refusal_of(bytes), descriptor_refusal::zero_len);
}

TEST(RdmaDescriptorRefusal, range_overflow) {
  struct row {
    uint64_t addr, len;
    bool fits;
  };
  const row rows[] = {
    {UINT64_MAX, 1, false},             // one byte past the end
    {UINT64_MAX - 99, 100, false},      // addr + len == 2^64 wraps to 0
    {UINT64_MAX - 100, 100, true},      // ends at 2^64 - 1
    {1, UINT64_MAX, false},
    {0, UINT64_MAX, true},
    {0x00007f00deadbeefull, 1ull << 60, true},
    {1ull << 63, (1ull << 63) + 1, false},
  };
  for (const auto& r : rows) {
    auto d = sample();
    d.addr = r.addr;
    d.len = r.len;
    SCOPED_TRACE(std::to_string(r.addr) + " + " + std::to_string(r.len));
    EXPECT_EQ(ferry::validate_descriptor(d).has_value(), !r.fits);
    if (!r.fits) {
      EXPECT_EQ(ferry::validate_descriptor(d), descriptor_refusal::range_overflow);
      EXPECT_TRUE(encode_descriptor(d).empty()); // an owner can never send one
    }
    // The wire form, written by hand (the encoder refuses to).
    auto b = encode_descriptor(sample());
    for (int k = 0; k < 8; ++k) {
      b[11 + k] = static_cast<uint8_t>(r.addr >> (8 * k));
      b[19 + k] = static_cast<uint8_t>(r.len >> (8 * k));
    }
    auto got = decode_descriptor(b.data(), b.size());
    EXPECT_EQ(got.ok(), r.fits);
    if (!r.fits)
      EXPECT_EQ(got.refusal, descriptor_refusal::range_overflow);
  }
}

TEST(RdmaDescriptorRefusal, rkey_too_long) {
  auto bytes = encode_descriptor(sample(0));
  for (unsigned n : {4097u, 5000u, 65535u}) {
    auto b = bytes;
    b[27] = static_cast<uint8_t>(n);
    b[28] = static_cast<uint8_t>(n >> 8);
    b.resize(29 + n, 0); // even with all the bytes present
    EXPECT_EQ(refusal_of(b), descriptor_refusal::rkey_too_long) << n;
  }
}

TEST(RdmaDescriptorRefusal, rkey_len_mismatch_for_every_truncation) {
  auto bytes = encode_descriptor(sample(40));
  for (size_t n = 29; n < bytes.size(); ++n) {
    auto r = decode_descriptor(bytes.data(), n);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.refusal, descriptor_refusal::rkey_len_mismatch) << n;
  }
}

TEST(RdmaDescriptorRefusal, trailing_bytes) {
  for (size_t extra : {1u, 2u, 100u}) {
    auto b = encode_descriptor(sample(12));
    b.resize(b.size() + extra, 0);
    EXPECT_EQ(refusal_of(b), descriptor_refusal::trailing_bytes) << extra;
  }
  // A key length that claims less than what follows is the same case.
  auto b = encode_descriptor(sample(12));
  b[27] = 11;
  EXPECT_EQ(refusal_of(b), descriptor_refusal::trailing_bytes);
}

TEST(RdmaDescriptorRefusal, first_broken_rule_wins) {
  auto b = encode_descriptor(sample());
  b[0] = 9;     // backend
  b[2] = 1;     // flags
  b.push_back(0); // trailing
  EXPECT_EQ(refusal_of(b), descriptor_refusal::unknown_backend);
  b[0] = 1;
  EXPECT_EQ(refusal_of(b), descriptor_refusal::nonzero_flags);
  b[2] = 0;
  EXPECT_EQ(refusal_of(b), descriptor_refusal::trailing_bytes);
}

TEST(RdmaDescriptorRefusal, names_are_distinct) {
  std::set<std::string> names;
  for (auto r :
       {descriptor_refusal::too_short, descriptor_refusal::unknown_backend,
        descriptor_refusal::unknown_version, descriptor_refusal::nonzero_flags,
        descriptor_refusal::zero_len, descriptor_refusal::range_overflow,
        descriptor_refusal::rkey_too_long,
        descriptor_refusal::rkey_len_mismatch,
        descriptor_refusal::trailing_bytes})
    names.insert(to_string(r));
  EXPECT_EQ(names.size(), 9u);
  EXPECT_STREQ(to_string(descriptor_refusal::rkey_len_mismatch),
               "rkey_len_mismatch");
}

TEST(RdmaDescriptorEncode, refuses_what_decode_would_refuse) {
  auto d = sample();
  d.len = 0;
  EXPECT_TRUE(encode_descriptor(d).empty());
  EXPECT_EQ(ferry::validate_descriptor(d), descriptor_refusal::zero_len);
  d = sample(4097);
  EXPECT_TRUE(encode_descriptor(d).empty());
  EXPECT_EQ(ferry::validate_descriptor(d), descriptor_refusal::rkey_too_long);
  d = sample();
  d.flags = 4;
  EXPECT_TRUE(encode_descriptor(d).empty());
  d = sample();
  d.backend = 2;
  EXPECT_TRUE(encode_descriptor(d).empty());
  d = sample();
  d.version = 0;
  EXPECT_TRUE(encode_descriptor(d).empty());
  EXPECT_FALSE(ferry::validate_descriptor(sample()).has_value());
}

TEST(RdmaDescriptorBounds, never_reads_past_the_end) {
  ferry::test::guarded_buffer guard(ferry::max_descriptor_bytes + 16);
  ASSERT_TRUE(guard.valid());
  auto bytes = encode_descriptor(sample(300));
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const uint8_t* p = guard.place(bytes.data(), n);
    auto r = decode_descriptor(p, n);
    EXPECT_EQ(r.ok(), n == bytes.size()) << n;
  }
  // A header that claims the maximum key, with nothing after it.
  auto head = encode_descriptor(sample(0));
  head[27] = 0x00;
  head[28] = 0x10; // 4096
  auto r = decode_descriptor(guard.place(head.data(), head.size()), head.size());
  EXPECT_EQ(r.refusal, descriptor_refusal::rkey_len_mismatch);
}

TEST(RdmaDescriptorRandom, random_bytes_decode_only_to_round_trips) {
  std::mt19937_64 rng(42);
  size_t accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> b(rng() % 80);
    for (auto& x : b)
      x = static_cast<uint8_t>(rng());
    if (b.size() >= 29 && (i % 2) == 0) {
      // Make half the inputs plausible so the deeper rules get exercised.
      b[0] = 1;
      b[1] = 1;
      b[2] = 0;
      size_t key = b.size() - 29;
      if (key > 0 && rng() % 3 == 0)
        --key; // leaves one trailing byte
      b[27] = static_cast<uint8_t>(key);
      b[28] = 0;
    }
    auto r = decode_descriptor(b.data(), b.size());
    if (r.ok()) {
      ++accepted;
      EXPECT_EQ(encode_descriptor(*r.descriptor), b);
    }
  }
  EXPECT_GT(accepted, 0u);
}
