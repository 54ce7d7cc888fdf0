#include "util/version.hpp"

#include <archive.h>
#include <boost/version.hpp>
#include <fmt/format.h>
#include <git2/common.h>
#include <openssl/crypto.h>
#include <simdjson.h>
#include <zlib.h>
#include <zstd.h>

#include <string_view>

namespace harness {

namespace {

// "libarchive 3.6.2" → "3.6.2".
std::string without_prefix(std::string_view text, std::string_view prefix) {
    if (text.substr(0, prefix.size()) == prefix) {
        text.remove_prefix(prefix.size());
    }
    return std::string(text);
}

std::string libgit2_version() {
    int major = 0;
    int minor = 0;
    int revision = 0;
    git_libgit2_version(&major, &minor, &revision);
    return fmt::format("{}.{}.{}", major, minor, revision);
}

} // namespace

std::vector<LibraryVersion> library_versions() {
    return {
        {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
        // yaml-cpp 0.7 has no version macro: the version of the package CMake found
        // (harness/CMakeLists.txt passes it).
        {"yaml-cpp", CCL_YAML_CPP_VERSION},
        {"libgit2", libgit2_version()},
        {"libarchive", without_prefix(archive_version_string(), "libarchive ")},
        {"zstd", ZSTD_versionString()},
        {"zlib", zlibVersion()},
        {"OpenSSL", OpenSSL_version(OPENSSL_VERSION_STRING)},
        {"simdjson",
         fmt::format("{}.{}.{}", static_cast<int>(simdjson::SIMDJSON_VERSION_MAJOR),
                     static_cast<int>(simdjson::SIMDJSON_VERSION_MINOR), static_cast<int>(simdjson::SIMDJSON_VERSION_REVISION))},
        {"Boost", fmt::format("{}.{}.{}", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100)},
    };
}

} // namespace harness
