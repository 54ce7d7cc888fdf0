#pragma once
// An image as one file, so a bundle can carry the exact software of its run and be reproduced
// offline: podman's OCI archive (podman save --format oci-archive), whose index names a manifest
// whose config digest is the image id podman gives the image.
#include "image/image_context.hpp"
#include "util/fs.hpp"

#include <string>

namespace harness {

/// Writes the runtime's image `tag` to `out` as an OCI archive: a temporary file beside it,
/// renamed once complete. Throws HarnessError with the runtime's words when it cannot.
void save_image_archive(const std::string& tag, const fs::path& out, const ImageContext& context);

/// The image id (64 hex) `archive` holds: its index's one manifest's config digest. Throws
/// input_error naming the archive when it is no single-image OCI archive.
std::string oci_archive_image_id(const fs::path& archive);

/// Loads `archive` into the runtime and tags its image `tag`; returns the image id. Throws
/// HarnessError when the runtime refuses it or loads another image than the archive names.
std::string load_image_archive(const fs::path& archive, const std::string& tag, const ImageContext& context);

} // namespace harness
