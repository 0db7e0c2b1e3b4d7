#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>

namespace ferry::bench {

summary summarize(std::vector<double> samples) {
  summary s;
  if (samples.empty())
    return s;
  std::sort(samples.begin(), samples.end());
  auto n = samples.size();
  s.runs = static_cast<int>(n);
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2]
                        : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  return s;
}

latency percentiles(std::vector<double> samples) {
  latency l;
  if (samples.empty())
    return l;
  std::sort(samples.begin(), samples.end());
  auto n = samples.size();
  auto rank = [&](double p) { // 1-based nearest rank, ceil(p/100 * n)
    auto r = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
    return samples[std::clamp<size_t>(r, 1, n) - 1];
  };
  l.ops = n;
  l.p50 = rank(50);
  l.p99 = rank(99);
  l.max = samples.back();
  return l;
}

} // namespace ferry::bench
