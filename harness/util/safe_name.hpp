#pragma once
// Names that arrive as data (from a bundle, a card, provenance.json, a server) are never trusted
// as paths: this is the one check every such name passes before it touches the file system.
// libarchive's secure extraction (ARCHIVE_EXTRACT_SECURE_NODOTDOT, _NOABSOLUTEPATHS) refuses the
// same shapes; control characters and length are refused here as well because the names are
// also printed and handed to other tools.
#include "util/fs.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace harness {

/// Longest name accepted, in bytes, and longest component (Linux's PATH_MAX and NAME_MAX).
constexpr std::size_t k_max_safe_name_bytes = 4096;
constexpr std::size_t k_max_safe_component_bytes = 255;

/// Why `name` cannot be used as a path relative to a directory the harness controls, or "" when
/// it can: empty, absolute, an empty, "." or ".." component, a NUL, control character or
/// backslash, or longer than the limits above. Slashes between components are allowed.
std::string relative_name_problem(std::string_view name);

/// As relative_name_problem, and also refuses any '/': one file name in one directory.
std::string file_name_problem(std::string_view name);

/// `base / name` when `name` passes relative_name_problem; otherwise throws input_error (exit 2)
/// "`what` "NAME": PROBLEM", the name quoted and escaped.
fs::path safe_path_under(const fs::path& base, std::string_view name, std::string_view what);

} // namespace harness
