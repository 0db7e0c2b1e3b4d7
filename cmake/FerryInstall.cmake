# The installed package: the public headers under include/ferry/ (the
# umbrella <ferry/ferry.hpp> and every header it reaches, in the source
# layout; headers it does not reach are internal and not installed), the
# libraries behind the exported target ferry::ferry, the CMake package
# (ferryConfig.cmake, ferryConfigVersion.cmake, the CAF find module), the
# `ferry` binary and the deploy scripts under share/ferry/. CPack makes a
# Debian package of it (cpack -G DEB).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The headers `root` reaches through "quoted" includes of the source tree.
function(ferry_header_closure out root)
  set(todo ${root})
  set(seen)
  while(todo)
    list(POP_FRONT todo header)
    if(header IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${header})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${header} lines REGEX "^#include \"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
      if(EXISTS ${PROJECT_SOURCE_DIR}/${inc})
        list(APPEND todo ${inc})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

ferry_header_closure(FERRY_PUBLIC_HEADERS runtime/ferry.hpp)
set(FERRY_PUBLIC_HEADERS ${FERRY_PUBLIC_HEADERS} CACHE INTERNAL "installed headers")
foreach(header IN LISTS FERRY_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ferry/${dir})
endforeach()
install(FILES runtime/ferry.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ferry)

# The API reference (Doxygen) of the installed headers: `--target docs`.
find_program(DOXYGEN_EXECUTABLE doxygen)
if(DOXYGEN_EXECUTABLE)
  set(FERRY_DOCS_DIR ${CMAKE_CURRENT_BINARY_DIR}/docs)
  set(FERRY_DOXYGEN_INPUT)
  foreach(header IN LISTS FERRY_PUBLIC_HEADERS)
    string(APPEND FERRY_DOXYGEN_INPUT " ${PROJECT_SOURCE_DIR}/${header}")
  endforeach()
  configure_file(docs/Doxyfile ${CMAKE_CURRENT_BINARY_DIR}/Doxyfile @ONLY)
  add_custom_target(docs COMMAND ${DOXYGEN_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "API reference (Doxygen) into ${FERRY_DOCS_DIR}/html")
endif()

# ferry::ferry: the runtime and every library under it.
add_library(ferry_lib INTERFACE)
target_link_libraries(ferry_lib INTERFACE ferry_runtime)
set_target_properties(ferry_lib PROPERTIES EXPORT_NAME ferry)
set(ferry_libraries ferry_lib ferry_runtime ferry_actors ferry_staging ferry_protocol
    ferry_rdma_core)
if(TARGET ferry_ucx)
  list(APPEND ferry_libraries ferry_ucx)
endif()
install(TARGETS ${ferry_libraries} EXPORT ferryTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The installed archives without their debug info (it stays in the build
# tree): a third of the size of the package.
if(CMAKE_STRIP)
  foreach(lib IN LISTS ferry_libraries)
    if(NOT lib STREQUAL "ferry_lib")
      install(CODE "execute_process(COMMAND ${CMAKE_STRIP} --strip-debug
        \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/lib${lib}.a\")")
    endif()
  endforeach()
endif()
install(EXPORT ferryTargets NAMESPACE ferry::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
configure_package_config_file(cmake/ferryConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake cmake/FindFerryCAF.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)

install(TARGETS ferry RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY deploy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ferry/deploy
  USE_SOURCE_PERMISSIONS PATTERN "fetch-gpu-debs.sh" EXCLUDE)

# cpack -G DEB: Depends are the Debian packages needed to run ferry and to
# build against it (the -dev packages bring their libraries).
set(CPACK_PACKAGE_NAME ferry)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "ferry developers <ferry@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Actor runtime for distributed workers: large data by handle (CAF, UCX)")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libcaf-dev (>= 0.17.6), libucx-dev (>= 1.13), libmsgpack-cxx-dev, nlohmann-json3-dev, prometheus-cpp-dev, libcivetweb-dev, libssl-dev, libnuma-dev, libcli11-dev, libspdlog-dev, cmake (>= 3.22), g++")
set(CPACK_STRIP_FILES ON) # the debug info stays in the build tree
set(CPACK_GENERATOR DEB)
include(CPack)
