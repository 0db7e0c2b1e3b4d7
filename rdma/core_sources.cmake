# ferry_rdma_core: the pure parts of the UCX layer (offset allocator, UCX 1.13
# packed-rkey pre-parse, arena pool over a region mapper). No UCX link, no threads: unit-tested and fuzzed alone.
add_library(ferry_rdma_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/arena_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/control_channel_choice.cpp
  ${CMAKE_CURRENT_LIST_DIR}/control_protocol.cpp
  ${CMAKE_CURRENT_LIST_DIR}/endpoint_activity.cpp
  ${CMAKE_CURRENT_LIST_DIR}/external_region.cpp
  ${CMAKE_CURRENT_LIST_DIR}/failure_reports_choice.cpp
  ${CMAKE_CURRENT_LIST_DIR}/offset_allocator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/one_sided_reads.cpp
  ${CMAKE_CURRENT_LIST_DIR}/region_registry.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rkey_preparse.cpp)
ferry_public_includes(ferry_rdma_core)
# 64-bit ids in text (protocol/hex64.hpp): capabilities and machine tokens.
target_link_libraries(ferry_rdma_core PUBLIC ferry_protocol)
