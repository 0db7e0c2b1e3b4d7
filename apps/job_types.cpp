#include "apps/job_types.hpp"

#include <charconv>

namespace ferry::app {

namespace {

std::optional<uint64_t> number(std::string_view text) {
  uint64_t x = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return x;
}

} // namespace

void put_stats(messenger::headers& h, const shard_stats& s) {
  h["count"] = std::to_string(s.count);
  h["sum"] = std::to_string(s.sum);
  std::string bins;
  for (size_t i = 0; i < s.histogram.size(); ++i) {
    if (i > 0)
      bins += ',';
    bins += std::to_string(s.histogram[i]);
  }
  h["histogram"] = std::move(bins);
}

std::optional<shard_stats> take_stats(const messenger::headers& h) {
  auto count = h.find("count");
  auto sum = h.find("sum");
  auto hist = h.find("histogram");
  if (count == h.end() || sum == h.end() || hist == h.end())
    return std::nullopt;
  shard_stats s;
  auto c = number(count->second);
  auto t = number(sum->second);
  if (!c || !t)
    return std::nullopt;
  s.count = *c;
  s.sum = *t;
  std::string_view rest = hist->second;
  while (!rest.empty() && s.histogram.size() <= histogram_bins) {
    auto comma = rest.find(',');
    auto bin = number(rest.substr(0, comma));
    if (!bin)
      return std::nullopt;
    s.histogram.push_back(*bin);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (s.histogram.size() != histogram_bins)
    return std::nullopt;
  return s;
}

} // namespace ferry::app
