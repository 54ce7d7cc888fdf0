# `cmake --install build --prefix P`: the binary in P/bin, its data in P/share/ccl-harness, where
# harness_home() looks first (harness/util/home.cpp). Nothing here needs root: any writable prefix works.
include(GNUInstallDirs)

install(TARGETS ccl-harness RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY templates clusters containers workloads
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ccl-harness
        USE_SOURCE_PERMISSIONS
        PATTERN "__pycache__" EXCLUDE)
# docs/ sits beside workloads/ as in the checkout: the reference cards' yaml-language-server
# modelines point at ../../docs/schema/.
install(DIRECTORY docs DESTINATION ${CMAKE_INSTALL_DATADIR}/ccl-harness)
install(FILES README.md ARCHITECTURE.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ccl-harness)
