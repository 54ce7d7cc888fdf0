#pragma once
// What a path handed to verify, compare, metrics or submit is: one triage for all of them, so
// that they cannot disagree on what a packed bundle, a bundle directory or a run directory looks
// like. Each command then says which kinds it takes and words its own refusal.
#include "util/fs.hpp"

#include <string>

namespace harness {

enum class InputKind {
    missing,       ///< nothing at the path
    packed_bundle, ///< a regular file named *.tar.zst; its content is checked when it is opened
    bundle_dir,    ///< a directory holding manifest.json, or holding only such a directory (an unpacked archive)
    run_dir,       ///< a directory holding card.yaml and run.json, as `run` leaves it
    other_file,    ///< any other regular file
    other_dir,     ///< any other directory
    special,       ///< neither a regular file nor a directory (a fifo, a socket, a device)
};

struct InputPath {
    InputKind kind = InputKind::missing;
    fs::path dir;     ///< bundle_dir and run_dir: the directory to read, absolute, without a trailing "/"
    std::string name; ///< bundle_dir and run_dir: dir's last component (a bundle's name)
};

/// Triage of a path from the command line. A symlink given there is followed, as a user expects;
/// links inside a bundle are the extractor's and verify's business.
InputPath classify_input(const fs::path& path);

/// What a file that is not a zstd stream is, from its first bytes ("a gzip-compressed file (a
/// .tar.gz?)", "a zip archive"...), or empty when it starts like zstd: a refusal can then name
/// the common wrong files.
std::string foreign_archive_kind(const fs::path& file);

} // namespace harness
