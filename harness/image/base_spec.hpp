#pragma once
// A base image is described by a small YAML file, containers/base/<name>.yaml: which Debian
// suite, mirror, variant and packages mmdebstrap installs. The image's tag carries the hash of
// that description, so a Containerfile rendered against one description names exactly that base,
// and a changed description is a different base rather than a silently different image.
#include "util/fs.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

/// What one containers/base/<name>.yaml says.
struct BaseSpec {
    std::string name;                    ///< the file's stem: "bookworm-torch"
    fs::path path;                       ///< the file it was read from
    std::string suite;                   ///< Debian suite: "bookworm"
    std::string mirror;                  ///< "http://deb.debian.org/debian"
    std::string variant;                 ///< mmdebstrap --variant: "minbase"
    std::vector<std::string> packages;   ///< as written (the key sorts them)
    std::vector<std::string> components; ///< archive components; empty means mmdebstrap's "main"
    long long source_date_epoch = 0;     ///< SOURCE_DATE_EPOCH for mmdebstrap (0 when not given)
};

/// The prefix of every base image's tag: `localhost/ccl-base/<name>:<key16>`.
inline constexpr const char* k_base_tag_prefix = "localhost/ccl-base/";

/// Why `name` cannot name a base spec (it becomes a file name and part of an image tag), or ""
/// when it can: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit,
/// at most 64 bytes.
std::string base_name_problem(const std::string& name);

/// Reads `home`/containers/base/`name`.yaml. Throws input_error (exit 2) for a bad name, a
/// missing file, invalid YAML, an unknown key or a missing/ill-typed field; the message names
/// file:line:col and the field.
BaseSpec load_base_spec(const fs::path& home, const std::string& name);

/// sha256 hex (64) of a canonical text of the fields that decide the image's contents (suite,
/// mirror, variant, components, sorted and de-duplicated packages, source_date_epoch). The
/// name, comments, key order and package order do not change it.
std::string base_key(const BaseSpec& spec);

/// `localhost/ccl-base/<name>:<first 16 hex of base_key>`.
std::string base_tag(const BaseSpec& spec);

/// The base's name for a reference of base_tag's exact shape (prefix, valid name, ':', 16
/// lower-case hex); nullopt for any other image reference, which is left to the runtime.
std::optional<std::string> base_name_of_tag(const std::string& tag);

/// The 16 hex after the ':' of a base tag; nullopt for any other image reference.
std::optional<std::string> base_key16_of_tag(const std::string& tag);

} // namespace harness
