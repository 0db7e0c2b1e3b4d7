#include "bench/hex_text.hpp"

namespace ferry::bench {

namespace {

int nibble(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

std::string to_hex(const void* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  auto* p = static_cast<const uint8_t*>(data);
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 0xf]);
  }
  return out;
}

bool from_hex(const std::string& text, std::vector<uint8_t>* out) {
  if (text.size() % 2 != 0)
    return false;
  out->clear();
  out->reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]);
    int lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out->push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

} // namespace ferry::bench
