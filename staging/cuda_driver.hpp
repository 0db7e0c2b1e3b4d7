// cuda_driver: the real cuda_api, the CUDA driver API loaded at run time
// (dlopen of libcuda.so.1, or FERRY_CUDA_DRIVER), so a ferry built with the
// toolkit runs on a machine without a driver or a GPU: the api then says
// why (unavailable_reason: "libcuda.so.1: cannot open ...", "cuInit:
// CUDA_ERROR_NO_DEVICE", ...) and every call fails with
// staging_unavailable. Built without the toolkit, it always says so.
// Must never: crash or abort the process when the driver is missing or old.
#pragma once

#include <memory>
#include <string>

#include "staging/cuda_api.hpp"

namespace ferry::staging {

/// Loads the driver from `library` (empty: FERRY_CUDA_DRIVER, else
/// libcuda.so.1) and initialises it.
std::unique_ptr<cuda_api> load_cuda_driver(const std::string& library = {});

} // namespace ferry::staging
