#include "staging/remote_geometry.hpp"

#include <algorithm>
#include <string>

#include "protocol/errors.hpp"

namespace ferry::staging {

uint32_t chunks_of(uint64_t length, uint64_t chunk) {
  if (length == 0 || chunk == 0)
    return 0;
  return static_cast<uint32_t>((length + chunk - 1) / chunk);
}

bool chunk_count_fits(uint64_t length, uint64_t chunk) {
  return chunk != 0 && length / chunk + (length % chunk != 0) <= UINT32_MAX;
}

uint32_t ring_width(uint32_t depth_a, uint32_t depth_b, uint32_t chunks) {
  return std::max<uint32_t>(1, std::min({depth_a, depth_b, chunks}));
}

chunk_span span_of(uint64_t length, uint64_t chunk, uint32_t i) {
  chunk_span s;
  s.offset = std::min(length, uint64_t{i} * chunk);
  s.length = std::min(chunk, length - s.offset);
  return s;
}

caf::error check_pipeline_depth(uint64_t depth, uint64_t chunk_count) {
  if (depth < 1 || depth > max_pipeline_depth)
    return make_error(errc::invalid_argument,
                      "--staging-pipeline-depth " + std::to_string(depth)
                        + ": from 1 (serial) to " + std::to_string(max_pipeline_depth));
  if (depth > chunk_count)
    return make_error(errc::invalid_argument,
                      "--staging-pipeline-depth " + std::to_string(depth)
                        + " is more than --staging-chunk-count "
                        + std::to_string(chunk_count));
  return {};
}

} // namespace ferry::staging
