# `cmake --install build --prefix P` installs the static libraries, the public headers
# (include/trib) and the `trib` program, and exports the package Tributary: an outside
# project calls find_package(Tributary) and links Tributary::tributary (everything) or one
# subsystem (Tributary::train, Tributary::ps, ...). See examples/cpp/CMakeLists.txt.
include(CMakePackageConfigHelpers)

# Tributary::tributary: every exported subsystem library.
get_property(trib_exported GLOBAL PROPERTY TRIB_EXPORTED_LIBRARIES)
add_library(trib_tributary INTERFACE)
target_link_libraries(trib_tributary INTERFACE ${trib_exported})
set_target_properties(trib_tributary PROPERTIES EXPORT_NAME tributary)
install(TARGETS trib_tributary EXPORT TributaryTargets)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/trib DESTINATION include)
install(TARGETS trib RUNTIME DESTINATION bin)

set(trib_cmake_dir lib/cmake/Tributary)
install(EXPORT TributaryTargets NAMESPACE Tributary:: DESTINATION ${trib_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TributaryConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TributaryConfig.cmake INSTALL_DESTINATION ${trib_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TributaryConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TributaryConfig.cmake
  ${PROJECT_BINARY_DIR}/TributaryConfigVersion.cmake DESTINATION ${trib_cmake_dir})
