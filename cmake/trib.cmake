# Helpers that keep the per-folder CMake files one line per library or test binary.
# Sources are globbed per folder so that adding a file never needs a CMake edit.

# trib_library(NAME [INTERNAL] DEPS ...): builds src/NAME/**.cc into the static library trib_NAME.
# Unless INTERNAL, the library is installed and exported as Tributary::NAME (cmake/install.cmake).
function(trib_library name)
  cmake_parse_arguments(A "INTERNAL" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cc)
  if(NOT srcs)
    return()  # a subsystem not written yet
  endif()
  add_library(trib_${name} STATIC ${srcs})
  # Public headers from the source tree while building, from the prefix once installed.
  target_include_directories(trib_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(trib_${name} PUBLIC ${A_DEPS})
  if(NOT A_INTERNAL)
    set_target_properties(trib_${name} PROPERTIES EXPORT_NAME ${name})
    install(TARGETS trib_${name} EXPORT TributaryTargets ARCHIVE DESTINATION lib)
    set_property(GLOBAL APPEND PROPERTY TRIB_EXPORTED_LIBRARIES trib_${name})
  endif()
endfunction()

# trib_test(NAME LABEL unit|integration|e2e DEPS ... [FAULTS FILTER] [SERIAL FILTER]): one
# GoogleTest binary per subsystem and tier, built from tests/LABEL/NAME/*.cc and registered with
# CTest under its label. FAULTS is a GoogleTest filter ("Suite.*:Other.Test") naming the tests
# that inject a fault of RELIABILITY.md; they are labelled `faults` too (`ctest -L faults`).
# SERIAL names fault tests (a subset of FAULTS) that CTest runs alone (RUN_SERIAL): their fault
# lands inside a window of a few milliseconds that a second test's processes on the same two
# cores can move (docs/kafka_mock_coordinator.md).
function(trib_test name)
  cmake_parse_arguments(A "" "LABEL;TIMEOUT;FAULTS;SERIAL" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${A_LABEL}/${name}/*.cc)
  if(NOT srcs)
    return()
  endif()
  set(target test_${A_LABEL}_${name})
  add_executable(${target} ${srcs})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${target} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  # Tests find their data through this, never through __FILE__ (which a compiler cache may make relative).
  target_compile_definitions(${target} PRIVATE TRIB_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  if(A_SERIAL AND NOT A_FAULTS)
    message(FATAL_ERROR "trib_test(${name}): SERIAL names fault tests, and FAULTS is not given")
  endif()
  if(A_FAULTS)
    gtest_discover_tests(${target} TEST_FILTER "-${A_FAULTS}"
      PROPERTIES LABELS ${A_LABEL} TIMEOUT ${A_TIMEOUT}
      DISCOVERY_TIMEOUT 60)
    set(fault_filter "${A_FAULTS}")
    if(A_SERIAL)
      set(fault_filter "${A_FAULTS}-${A_SERIAL}")
      gtest_discover_tests(${target} TEST_FILTER "${A_SERIAL}" TEST_LIST ${target}_SERIAL_TESTS
        PROPERTIES LABELS ${A_LABEL} TIMEOUT ${A_TIMEOUT}
        DISCOVERY_TIMEOUT 60)
    endif()
    gtest_discover_tests(${target} TEST_FILTER "${fault_filter}" TEST_LIST ${target}_FAULT_TESTS
      PROPERTIES LABELS ${A_LABEL} TIMEOUT ${A_TIMEOUT}
      DISCOVERY_TIMEOUT 60)
    # A second label cannot pass through gtest_discover_tests' PROPERTIES (its list is
    # flattened), so it is added when CTest reads the discovered tests, after their file.
    set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_fault_labels.cmake)
    file(WRITE ${labels_file}
      "if(${target}_FAULT_TESTS)\n  set_tests_properties(\${${target}_FAULT_TESTS} PROPERTIES LABELS \"${A_LABEL};faults\")\nendif()\n"
      "if(${target}_SERIAL_TESTS)\n  set_tests_properties(\${${target}_SERIAL_TESTS} PROPERTIES LABELS \"${A_LABEL};faults\" RUN_SERIAL TRUE)\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
  else()
    gtest_discover_tests(${target}
      PROPERTIES LABELS ${A_LABEL} TIMEOUT ${A_TIMEOUT}
      DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
