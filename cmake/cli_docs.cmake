# Shell completions and the man page, written by the built ccl-harness from its command table
# (harness/cli/docs_gen.cpp), so that they describe exactly what the binary parses:
#   <build>/completions/ccl-harness.bash, _ccl-harness (zsh), ccl-harness.fish; <build>/man/ccl-harness.1
# Included from CMakeLists.txt after the ccl-harness target; the same file is also the script the
# build runs (cmake -P) to write them, since execute_process captures output portably.

if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DHARNESS=<binary> -DOUT=<build dir> -DDATE=<YYYY-MM-DD> -P cli_docs.cmake
  function(write_generated file)
    execute_process(COMMAND "${HARNESS}" ${ARGN}
                    OUTPUT_FILE "${OUT}/${file}.tmp" ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      file(REMOVE "${OUT}/${file}.tmp")
      message(FATAL_ERROR "${HARNESS} ${ARGN}: exit ${rc}: ${err}")
    endif()
    file(RENAME "${OUT}/${file}.tmp" "${OUT}/${file}")
  endfunction()
  file(MAKE_DIRECTORY "${OUT}/completions" "${OUT}/man")
  write_generated(completions/ccl-harness.bash completion bash)
  write_generated(completions/_ccl-harness completion zsh)
  write_generated(completions/ccl-harness.fish completion fish)
  write_generated(man/ccl-harness.1 manpage --date "${DATE}")
  return()
endif()

include(GNUInstallDirs)

# The man page's date: the configure day, or SOURCE_DATE_EPOCH's for a reproducible build.
string(TIMESTAMP HARNESS_MAN_DATE "%Y-%m-%d" UTC)

set(HARNESS_CLI_DOCS
  ${CMAKE_BINARY_DIR}/completions/ccl-harness.bash
  ${CMAKE_BINARY_DIR}/completions/_ccl-harness
  ${CMAKE_BINARY_DIR}/completions/ccl-harness.fish
  ${CMAKE_BINARY_DIR}/man/ccl-harness.1)
add_custom_command(
  OUTPUT ${HARNESS_CLI_DOCS}
  COMMAND ${CMAKE_COMMAND} -DHARNESS=$<TARGET_FILE:ccl-harness> -DOUT=${CMAKE_BINARY_DIR} -DDATE=${HARNESS_MAN_DATE}
          -P ${CMAKE_CURRENT_LIST_DIR}/cli_docs.cmake
  DEPENDS ccl-harness ${CMAKE_CURRENT_LIST_DIR}/cli_docs.cmake
  COMMENT "Generating shell completions and the man page from ccl-harness"
  VERBATIM)
add_custom_target(cli_docs ALL DEPENDS ${HARNESS_CLI_DOCS})

install(FILES ${CMAKE_BINARY_DIR}/completions/ccl-harness.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ccl-harness)
install(FILES ${CMAKE_BINARY_DIR}/completions/_ccl-harness
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
install(FILES ${CMAKE_BINARY_DIR}/completions/ccl-harness.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${CMAKE_BINARY_DIR}/man/ccl-harness.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
