# Finds every library ferry links. CAF 0.17 ships no CMake config on Debian 12,
# so it is found by header and library name.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(msgpack REQUIRED)          # target: msgpackc-cxx
find_package(prometheus-cpp REQUIRED)
find_package(OpenSSL REQUIRED)       # runtime/openssl_error_queue.cpp
find_package(civetweb REQUIRED)      # the HTTP port: /metrics, /healthz, /readyz
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)

find_package(FerryCAF REQUIRED) # cmake/FindFerryCAF.cmake: caf::core, caf::io, caf::openssl

# Where a ferry library's headers are found: the source tree while building,
# include/ferry (the installed tree, which keeps the source layout) after.
function(ferry_public_includes target)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:include>
    $<INSTALL_INTERFACE:include/ferry>)
endfunction()

find_library(NUMA_LIBRARY numa)

# xxHash (libxxhash-dev) backs checksum64; it is compiled in from its header
# (XXH_INLINE_ALL), so nothing of it is linked or needed at run time.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)

if(FERRY_WITH_UCX)
  find_package(ucx QUIET)
  if(NOT ucx_FOUND)
    message(STATUS "ferry: UCX not found, building without the RDMA path")
    set(FERRY_WITH_UCX OFF)
  endif()
endif()

if(FERRY_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    message(STATUS "ferry: CUDA toolkit not found, building with the fake CUDA API only")
    set(FERRY_WITH_CUDA OFF)
  endif()
endif()
# What was really built, for CI to check (the options say what was asked).
set(FERRY_CUDA_BUILT ${FERRY_WITH_CUDA} CACHE INTERNAL "the real CUDA backend is built")
message(STATUS "ferry: UCX=${FERRY_WITH_UCX} CUDA=${FERRY_WITH_CUDA} tests=${FERRY_BUILD_TESTS} sanitize=${FERRY_SANITIZE}")
