#pragma once
// A packed bundle, unpacked for reading: the one safe way every command that accepts a
// <name>.tar.zst (metrics, compare) gets at its files. verify, which must tell a truncated
// archive from an unsafe one, does its own.
#include "util/fs.hpp"

namespace harness {

/// Unpacks `archive` with extract_tar_zst_safely into `dest` (which must not exist) and returns
/// its one top-level directory <name>/. A damaged or unsafe archive, or one without exactly one
/// top-level directory, is an input error (exit 2) naming the archive; Ctrl-C keeps exit 130.
fs::path unpack_bundle(const fs::path& archive, const fs::path& dest);

} // namespace harness
