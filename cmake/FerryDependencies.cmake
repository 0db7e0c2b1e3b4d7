# Finds every library ferry links. CAF 0.17 ships no CMake config on Debian 12,
# so it is found by header and library name.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(msgpack REQUIRED)          # target: msgpackc-cxx
find_package(prometheus-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)

find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(caf::core UNKNOWN IMPORTED)
set_target_properties(caf::core PROPERTIES IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(caf::io UNKNOWN IMPORTED)
set_target_properties(caf::io PROPERTIES IMPORTED_LOCATION ${CAF_IO_LIBRARY}
  INTERFACE_LINK_LIBRARIES caf::core)

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
