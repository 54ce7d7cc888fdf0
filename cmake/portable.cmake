# CCL_PORTABLE=ON: the release binary (.ci/release, docs/portable.md), linked fully static so that
# it runs on any x86-64 Linux kernel whatever its libc. Included twice from CMakeLists.txt: before
# the find_package calls (CCL_PORTABLE_STAGE "find": prefer static archives) and after the targets
# exist ("link"). The static fmt, simdjson, libarchive and libgit2 come from CMAKE_PREFIX_PATH
# (what .ci/release builds); the rest are Debian's own .a files.

if(CCL_PORTABLE_STAGE STREQUAL "find")
  # Platform files set the suffixes as a normal variable, so a cache value would be shadowed.
  set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
  set(Boost_USE_STATIC_LIBS ON)
  set(OPENSSL_USE_STATIC_LIBS ON)
  # Seen by every target that includes util/version.hpp: records and --version name this build.
  add_compile_definitions(CCL_HARNESS_PORTABLE=1)
  return()
endif()

# pkg-config's Libs.private (libssh2, OpenSSL, pcre2, http_parser, zlib) that a shared libgit2
# would have carried itself.
set_property(TARGET PkgConfig::LIBGIT2 APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${LIBGIT2_STATIC_LDFLAGS})
# libarchive.a's own codecs, after it on the link line.
set_property(TARGET LibArchive::LibArchive APPEND PROPERTY INTERFACE_LINK_LIBRARIES PkgConfig::ZSTD ZLIB::ZLIB)
# Debian's libsqlite3.a (libsqlite3-dev; FindSQLite3 takes it under the .a suffix above) leaves
# libm and libdl to the link line. Its dlopen serves only extension loading, which the reader
# turns off (metrics/sqlite_guarded.cpp): static glibc's link-time warning about it is harmless.
set_property(TARGET SQLite::SQLite3 APPEND PROPERTY INTERFACE_LINK_LIBRARIES m ${CMAKE_DL_LIBS} Threads::Threads)
# yaml-cpp's CMake package names only the shared library; Debian ships the archive beside it.
get_target_property(_ccl_yaml_cpp_so yaml-cpp LOCATION)
get_filename_component(_ccl_yaml_cpp_dir "${_ccl_yaml_cpp_so}" DIRECTORY)
if(NOT EXISTS "${_ccl_yaml_cpp_dir}/libyaml-cpp.a")
  message(FATAL_ERROR "CCL_PORTABLE: no ${_ccl_yaml_cpp_dir}/libyaml-cpp.a (apt-get install libyaml-cpp-dev)")
endif()
# (By full path: a target without a soname would end the link line with -Wl,-Bdynamic.)
set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION "${_ccl_yaml_cpp_dir}/libyaml-cpp.a"
                                          IMPORTED_LOCATION_NONE "${_ccl_yaml_cpp_dir}/libyaml-cpp.a")
foreach(_ccl_lib fmt::fmt simdjson::simdjson)
  get_target_property(_ccl_type ${_ccl_lib} TYPE)
  if(NOT _ccl_type STREQUAL "STATIC_LIBRARY")
    message(FATAL_ERROR "CCL_PORTABLE: ${_ccl_lib} is ${_ccl_type}: build the static one with .ci/release")
  endif()
endforeach()

# What a static glibc must not do on a foreign host, fixed before main (util/portable_runtime.cpp).
target_sources(ccl-harness PRIVATE ${PROJECT_SOURCE_DIR}/harness/util/portable_runtime.cpp)
target_link_options(ccl-harness PRIVATE -static)
