// local_device_range: the check that a range of this process's memory is
// CUDA device memory of its whole length (one allocation), shared by the
// requester of a remote staging session and a transfer batch's preparation.
#pragma once

#include <cstddef>
#include <utility>

#include <caf/error.hpp>

#include "protocol/errors.hpp"
#include "staging/cuda_api.hpp"

namespace ferry::staging {

/// Why [p, p + bytes) is not device memory of one allocation, or none.
inline caf::error local_device_range_error(cuda_api& api, device_ptr p, size_t bytes) {
  auto kind = api.memory_kind_of(p, bytes);
  if (!kind)
    return std::move(kind.error());
  if (*kind != memory_kind::device)
    return make_error(errc::invalid_argument,
                      "the local range is not CUDA device memory of its length");
  return {};
}

} // namespace ferry::staging
