#pragma once
// manifest.json: the size and sha256 of every file in a bundle, and the check a maintainer runs
// against it. The manifest never lists itself.
#include "util/json.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace harness {

namespace fs = std::filesystem;

inline constexpr int k_manifest_format = 1;
inline constexpr const char* k_manifest_name = "manifest.json";

struct ManifestFile {
    std::string path; ///< relative to the bundle, '/'-separated
    std::uint64_t size = 0;
    std::string sha256;
};

/// {"files": [{"path", "sha256", "size"}...], "format": 1, "harness_version"} with `files`
/// sorted by path. `pack` builds it from the hashes taken while the files were compressed.
Json manifest_json(std::vector<ManifestFile> files, const std::string& harness_version);

/// manifest_json() for every regular
/// file under `bundle_dir` but the top-level manifest.json, sorted by path, hashed in chunks.
/// A symbolic link, a special file or a name that is not UTF-8 throws HarnessError.
Json make_manifest(const fs::path& bundle_dir, const std::string& harness_version);

struct ManifestProblem {
    std::string path; ///< relative to the bundle; "manifest.json" for problems with the manifest itself
    std::string message;
};

/// Every disagreement between `bundle_dir` and its manifest.json, sorted by path: missing and
/// unlisted files, size and sha256 mismatches, links and special files, malformed records, and
/// a missing or unreadable manifest. Empty means the bundle matches. Only files found by walking
/// the directory (links not followed) are ever read, whatever paths the manifest names. Throws
/// HarnessError only when `bundle_dir` is not a directory.
std::vector<ManifestProblem> check_manifest(const fs::path& bundle_dir);

} // namespace harness
