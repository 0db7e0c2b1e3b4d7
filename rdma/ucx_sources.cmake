# ferry_ucx: the UCX wrapper layer (context, worker, memory maps, endpoints,
# GETs). No CAF here: the actors wrap it later. Included by rdma/CMakeLists.txt
# when FERRY_WITH_UCX, after core_sources.cmake (so ferry_rdma_core, when it
# exists, is already defined).
add_library(ferry_ucx STATIC
  ${CMAKE_CURRENT_LIST_DIR}/ucx_env.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ucx_context.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ucx_worker.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ucx_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ucx_endpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ucx_get.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ucx_active_message.cpp)
ferry_public_includes(ferry_ucx)
target_link_libraries(ferry_ucx PUBLIC ucx::ucp ucx::ucs)
# spdlog: a failed unmap is logged at error (its pages are leaked on purpose).
target_link_libraries(ferry_ucx PRIVATE spdlog::spdlog)
# UCM (no imported target in UCX's CMake files): apply_ucx_defaults sets its
# memory-event switch directly, since UCM reads its variables at load time.
find_library(FERRY_UCM_LIBRARY ucm REQUIRED)
target_link_libraries(ferry_ucx PRIVATE ${FERRY_UCM_LIBRARY})

# The packed-rkey pre-parse (rdma/rkey_preparse.*) gates every unpack. It
# belongs to ferry_rdma_core; until that library exists, compile it here.
if(TARGET ferry_rdma_core)
  target_link_libraries(ferry_ucx PUBLIC ferry_rdma_core)
else()
  target_sources(ferry_ucx PRIVATE ${CMAKE_CURRENT_LIST_DIR}/rkey_preparse.cpp)
endif()
