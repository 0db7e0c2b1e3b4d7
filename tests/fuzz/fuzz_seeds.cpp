// Writes the small seed corpora of the fuzz targets:
//   fuzz_seeds <descriptor_dir> <rkey_dir>
// The rkey seeds are keys UCX 1.13.1 packed on a test machine (per transport),
// plus edge shapes; the descriptor seeds wrap them in valid descriptors and
// add one example of each refusal.
#include <cstdio>
#include <string>
#include <vector>

#include "protocol/rdma_descriptor.hpp"

namespace {

using bytes = std::vector<uint8_t>;

bytes from_hex(const char* hex) {
  bytes out;
  auto nibble = [](char c) {
    return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  };
  for (const char* p = hex; p[0] != '\0' && p[1] != '\0'; p += 2)
    out.push_back(static_cast<uint8_t>(nibble(p[0]) << 4 | nibble(p[1])));
  return out;
}

bool write_file(const std::string& dir, const std::string& name, const bytes& b) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    return false;
  }
  const bool ok = b.empty() || std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return std::fclose(f) == 0 && ok;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <descriptor_dir> <rkey_dir>\n", argv[0]);
    return 2;
  }
  const std::string desc_dir = argv[1];
  const std::string rkey_dir = argv[2];
  // Real packed keys (UCX 1.13.1, UCX_NET_DEVICES=lo).
  const std::vector<std::pair<const char*, const char*>> keys = {
    {"rkey_zero_length", "000000000000000000"},
    {"rkey_tcp", "01000000000000000000"},
    {"rkey_sm_user", "04000000000000000000"},
    {"rkey_default_user", "130000000000000000000000"},
    {"rkey_sm_allocate", "0500000000000000000c1b0000000000c5073f7f000000"},
    {"rkey_sysv_allocate", "0100000000000000000c2100000000c006083f7f0000"},
    {"rkey_default_allocate",
     "17000000000000000000000c160000000000c5073f7f000000"},
    {"rkey_posix_cma_allocate",
     "030000000000000000185c230000030000c000c006083f7f0000000010000000000000"},
    {"rkey_all_domains_empty_keys",
     "ffffffffffffffff00"
     "0000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000"},
    {"rkey_truncated", "0100000000000000000c2100"},
    {"rkey_bad_mem_type", "01000000000000000500"},
  };
  bool ok = true;
  for (const auto& [name, hex] : keys)
    ok = write_file(rkey_dir, name, from_hex(hex)) && ok;

  ferry::rdma_descriptor d;
  d.generation = 7;
  d.addr = 0x7f3f07c500000000ull;
  d.len = 1u << 20;
  int i = 0;
  for (const auto& [name, hex] : keys) {
    d.rkey = from_hex(hex);
    ok = write_file(desc_dir, "desc_" + std::to_string(i++) + "_" + name,
                    ferry::encode_descriptor(d))
         && ok;
  }
  d.rkey = from_hex("01000000000000000000");
  const bytes good = ferry::encode_descriptor(d);
  bytes b = good;
  b[0] = 2;
  ok = write_file(desc_dir, "refuse_backend", b) && ok;
  b = good;
  b[2] = 1;
  ok = write_file(desc_dir, "refuse_flags", b) && ok;
  b = good;
  for (int k = 19; k < 27; ++k)
    b[k] = 0;
  ok = write_file(desc_dir, "refuse_zero_len", b) && ok;
  b = good;
  for (int k = 11; k < 19; ++k) // addr 2^64 - 1: the range wraps
    b[k] = 0xff;
  ok = write_file(desc_dir, "refuse_range_overflow", b) && ok;
  b = good; // the last range that fits: addr 2^64 - 1 - len
  for (int k = 11; k < 19; ++k)
    b[k] = 0xff;
  b[11 + 2] = 0xef; // 2^64 - 1 - 2^20 (len is 2^20)
  ok = write_file(desc_dir, "edge_range_fits", b) && ok;
  b = good;
  b.pop_back();
  ok = write_file(desc_dir, "refuse_mismatch", b) && ok;
  b = good;
  b.push_back(0);
  ok = write_file(desc_dir, "refuse_trailing", b) && ok;
  b = good;
  b.resize(20);
  ok = write_file(desc_dir, "refuse_short", b) && ok;
  d.rkey.assign(ferry::max_descriptor_rkey_bytes, 0x5a);
  ok = write_file(desc_dir, "max_key", ferry::encode_descriptor(d)) && ok;
  return ok ? 0 : 1;
}
