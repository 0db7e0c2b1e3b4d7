#include "bench/stats.hpp"

#include <algorithm>

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

} // namespace ferry::bench
