#include "staging/staging_config.hpp"

#include <cerrno>
#include <cstdlib>

namespace ferry::staging {

namespace {

constexpr uint64_t small_page = 4096;
constexpr uint64_t numa_page = 2ull << 20; // a bound mapping may be backed by huge pages

uint64_t round_up(uint64_t x, uint64_t to) {
  return (x + to - 1) / to * to;
}

} // namespace

std::optional<staging_location> staging_location::parse(const std::string& text) {
  staging_location l;
  if (text == "any")
    return l;
  if (text == "auto") {
    l.k = kind::automatic;
    return l;
  }
  if (text.rfind("cpu:", 0) != 0 || text.size() == 4 || text.size() > 8)
    return std::nullopt;
  for (size_t i = 4; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9')
      return std::nullopt;
  l.k = kind::cpu;
  l.node = std::atoi(text.c_str() + 4);
  return l;
}

std::string staging_location::to_string() const {
  switch (k) {
    case kind::any: return "any";
    case kind::automatic: return "auto";
    case kind::cpu: return "cpu:" + std::to_string(node);
  }
  return "any";
}

uint64_t staging_config::physical_chunk_bytes() const {
  auto page = location.k == staging_location::kind::any ? small_page : numa_page;
  return round_up(chunk_size, page);
}

std::string staging_config::check() const {
  if (chunk_size == 0 || chunk_size > max_chunk_size)
    return "--staging-chunk-size must be 1 to " + std::to_string(max_chunk_size)
           + " bytes (got " + std::to_string(chunk_size) + ")";
  if (chunk_count == 0 || chunk_count > max_chunk_count)
    return "--staging-chunk-count must be 1 to " + std::to_string(max_chunk_count)
           + " (got " + std::to_string(chunk_count) + ")";
  auto total = physical_chunk_bytes() * chunk_count;
  if (total > max_pool_bytes)
    return "--staging-chunk-size x --staging-chunk-count is " + std::to_string(total)
           + " bytes with page padding (" + location.to_string()
           + "), more than the pool's 1 GiB";
  return {};
}

} // namespace ferry::staging
