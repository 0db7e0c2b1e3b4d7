#include "bench/bench_options.hpp"

#include <cctype>

namespace ferry::bench {

bench_options default_options(bool quick) {
  bench_options o;
  o.quick = quick;
  if (quick) {
    o.sizes = {4 * KiB, 4 * MiB, 16 * MiB, 64 * MiB};
    o.concurrency_sizes = {4 * MiB, 16 * MiB};
    o.fanin_sizes = {64 * KiB};
    o.fanin_handles = 512;
    o.warmup = 1;
    o.repeats = 3;
    o.cold_repeats = 3;
    o.rtt_repeats = 200;
    o.point_budget_s = 4;
    o.min_warmup_s = 0.01;
    o.min_timed_s = 0.03;
  } else {
    for (uint64_t s = 4 * KiB; s <= 256 * MiB; s *= 4)
      o.sizes.push_back(s); // 4 KiB, 16 KiB, ..., 64 MiB, 256 MiB
    o.concurrency_sizes = {1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB};
    o.fanin_sizes = {4 * KiB, 64 * KiB};
    o.fanin_handles = 4096;
  }
  o.consumer_counts = {1, 4, 16};
  return o;
}

uint64_t parse_size(const std::string& text) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0)
    return 0;
  auto unit = text.substr(i);
  for (auto& c : unit)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b")
    return n;
  if (unit == "k" || unit == "kib" || unit == "kb")
    return n * KiB;
  if (unit == "m" || unit == "mib" || unit == "mb")
    return n * MiB;
  if (unit == "g" || unit == "gib" || unit == "gb")
    return n * 1024 * MiB;
  return 0;
}

std::string format_size(uint64_t bytes) {
  if (bytes >= MiB && bytes % MiB == 0)
    return std::to_string(bytes / MiB) + " MiB";
  if (bytes >= KiB && bytes % KiB == 0)
    return std::to_string(bytes / KiB) + " KiB";
  return std::to_string(bytes) + " B";
}

} // namespace ferry::bench
