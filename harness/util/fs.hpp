#pragma once
#include <filesystem>
#include <string>

namespace harness {

namespace fs = std::filesystem;

/// The whole file, or a HarnessError naming the path.
std::string read_file(const fs::path& path);

/// Writes through a temporary file in the same directory and renames it into place, so a
/// crash leaves either the old content or the new, never half of one.
void write_file_atomic(const fs::path& path, const std::string& content, bool executable = false);

/// Whether `path` is `dir` or lies under it, after resolving both (links, `..`); neither needs
/// to exist.
bool is_inside(const fs::path& path, const fs::path& dir);

/// sha256 of a byte string, lowercase hex.
std::string sha256_hex(const std::string& bytes);

} // namespace harness
