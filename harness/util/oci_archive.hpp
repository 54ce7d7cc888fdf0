#pragma once
// An OCI image archive (podman save --format oci-archive: the image-layout spec's directory as
// one plain tar) checked before anything trusts it: a bundle carries one, and reproduce hands it
// to `podman load`, which unpacks it. Only the member headers are read, never the blobs, so the
// check costs a seek per member however large the image.
#include "util/fs.hpp"

#include <string>

namespace harness {

/// Why `archive` is not a safe OCI image archive, or "" when it is. The first problem found, naming
/// the member (`member "../x": ...`): not a tar, or damaged or truncated; a member name that
/// relative_name_problem refuses (absolute, `..`, control characters, too long; a leading "./"
/// and a directory's trailing "/" are allowed); a symbolic link whose target leaves the archive;
/// a hard link to a name it refuses; a device, FIFO, socket or other special member; more members
/// than InputLimit::bundle_entries; index.json or oci-layout missing, twice, or not a plain file.
/// A file that cannot be opened is a problem too; throws HarnessError only on Ctrl-C (exit 130).
std::string oci_archive_problem(const fs::path& archive);

} // namespace harness
