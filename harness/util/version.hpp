#pragma once
#include <string>
#include <vector>

namespace harness {
#ifdef CCL_HARNESS_PORTABLE
// SemVer build metadata: --version and every record say the release binary made them, and the
// version still compares equal to the Debian build's (docs/portable.md).
inline constexpr const char* k_version = "0.1.0+portable";
inline constexpr const char* k_build_kind = "portable static build";
#else
inline constexpr const char* k_version = "0.1.0";
// Linked against the shared libraries of the system it was built on (Debian 12's, in CI).
inline constexpr const char* k_build_kind = "shared-library build";
#endif

struct LibraryVersion {
    std::string name;
    std::string version;
};

/// The libraries this binary carries or loads, with the version of each that it runs: the
/// library's own version function where it has one (the copy actually linked), else the macros
/// of the headers it was compiled against (header-only or statically linked code).
std::vector<LibraryVersion> library_versions();
} // namespace harness
