# `trib --version` names the commit it was built from: git describes it when the project is
# configured (a build without reconfiguring keeps the old name). Without git, or outside a
# checkout (a source tarball), the commit is "unknown" and the build goes on.
set(TRIB_GIT_DESCRIBE "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(
    COMMAND ${GIT_EXECUTABLE} describe --always --dirty --tags
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    OUTPUT_VARIABLE trib_describe
    RESULT_VARIABLE trib_describe_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET)
  if(trib_describe_rc EQUAL 0 AND trib_describe)
    set(TRIB_GIT_DESCRIBE "${trib_describe}")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_info.h.in ${PROJECT_BINARY_DIR}/generated/build_info.h @ONLY)
