#pragma once
// Builds a rendered directory's Containerfile into a tagged image and records what it is: the
// image id from the runtime, the Containerfile's sha256, the base it was built on, and the
// Debian package list inside it, which is what reproduce compares to tell the same software
// from a different one.
#include "image/image_context.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <string>

namespace harness {

struct ImageRecord {
    std::string tag;                  ///< what it was built (or found) under
    std::string image_id;             ///< the runtime's id, 64 lower-case hex without "sha256:"
    std::string containerfile_sha256; ///< sha256 hex of the Containerfile it was built from
    std::string base_tag;             ///< the first FROM as written (a ccl-base tag or any reference)
    std::string base_id;              ///< the base's image id (64 hex), "" when the runtime could not say
    std::string packages;             ///< "name=version\n" per Debian package inside, sorted
    std::string packages_sha256;      ///< sha256 hex of `packages`
    bool built = false;               ///< false: an image with the tag existed and was reused
    bool base_built = false;          ///< a ccl-base image was built for it by this call
};

/// Builds `rendered_dir`/Containerfile as `tag` unless `context.runtime` has `tag` already.
/// Each FROM naming a ccl-base tag (localhost/ccl-base/NAME:KEY16) gets ensure_base_image for
/// containers/base/NAME.yaml first; when that spec's key no longer starts with KEY16 it is an
/// input error (exit 2) "containers/base/NAME.yaml changed since this Containerfile was
/// rendered". Any other FROM is left to the runtime. Build failures are HarnessError (exit 1)
/// with the runtime's last lines.
ImageRecord build_image(const fs::path& rendered_dir, const std::string& tag, const ImageContext& context);

/// Why `tag` cannot be handed to the runtime as an image name, or "" when it can.
std::string image_tag_problem(const std::string& tag);

/// The first FROM's image reference of a Containerfile's text (options such as --platform and
/// "AS name" dropped), with its 1-based line; throws input_error naming `display_name` when
/// there is none.
std::pair<std::string, int> containerfile_base(const std::string& text, const std::string& display_name);

Json image_record_to_json(const ImageRecord& record);

/// The inverse of image_record_to_json, strict: a missing, ill-typed, malformed or unknown
/// field, or packages_sha256 that is not the hash of packages, throws input_error naming
/// `where` and the field.
ImageRecord image_record_from_json(const Json& json, const std::string& where);

/// A readable account of how package list `new_list` differs from `old_list` (both in
/// ImageRecord::packages's format): "added", "removed" and "changed" sections, one package a
/// line, "NAME OLD -> NEW" for a changed one. "" when they hold the same packages and versions.
std::string diff_packages(const std::string& old_list, const std::string& new_list);

} // namespace harness
