#pragma once
namespace harness {
#ifdef CCL_HARNESS_PORTABLE
// SemVer build metadata: --version and every record say the release binary made them, and the
// version still compares equal to the Debian build's (docs/portable.md).
inline constexpr const char* k_version = "0.1.0+portable";
#else
inline constexpr const char* k_version = "0.1.0";
#endif
} // namespace harness
