#pragma once
// Deterministic .tar.zst bundles and their safe unpacking. Nothing here knows what a bundle holds:
// it packs a directory tree and unpacks one, refusing anything that is not a plain file or a
// directory in either direction.
#include <cstdint>
#include <filesystem>
#include <string>

namespace harness {

namespace fs = std::filesystem;

/// The mtime every entry gets: 2000-01-01T00:00:00Z (a fixed date tools do not warn about).
inline constexpr std::int64_t k_archive_mtime = 946684800;

/// Packs every directory and regular file under `source_dir` as `<top_name>/...` entries in a
/// pax (restricted) tar compressed with zstd on `threads` worker threads (below 1 means one).
/// Entries are sorted by path with fixed mtime, uid/gid 0, no owner names, mode 0755 for
/// directories and owner-executable files and 0644 otherwise, and nothing else from the host, so
/// the same tree always packs to the same bytes whatever the thread count. Files are streamed in
/// chunks: memory does not grow with their size, but it does with `threads` (measured: about
/// 45 MB with one worker, 10 to 17 MB more for each further one). A symlink or special file, a
/// file that changes size while it is read, `out_file` inside `source_dir`, an interrupt or any
/// I/O error throws HarnessError; the archive is written under a temporary name beside
/// `out_file` and renamed only when complete, so a failure leaves no archive.
void write_tar_zst(const fs::path& source_dir, const std::string& top_name, const fs::path& out_file, int threads);

struct ExtractLimits {
    /// Total declared size of the entries.
    std::uint64_t max_bytes = std::uint64_t{64} << 30;
    /// Expanded size over the archive's size on disk...
    double max_ratio = 200.0;
    /// ...checked once the expanded size passes this, so that small, very compressible files
    /// (a log of blank lines) are not mistaken for a bomb.
    std::uint64_t ratio_floor = std::uint64_t{16} << 20;
    std::uint64_t max_entries = 1000000;
};

/// Unpacks a .tar.zst into `dest_dir`, which it creates and which must not exist. A first pass
/// reads every header and refuses, before anything is written: absolute paths, `..` components,
/// links of any kind (symbolic or hard), devices, FIFOs and sockets, duplicate paths, more than
/// `max_entries` entries, and expansion past `max_bytes` or `max_ratio`. The second pass writes
/// files with fixed modes (0644, or 0755 when any execute bit is set) under the same checks;
/// any failure removes `dest_dir` and throws HarnessError naming the archive and the entry.
void extract_tar_zst_safely(const fs::path& archive, const fs::path& dest_dir, const ExtractLimits& limits = {});

/// sha256 of a file's content, lowercase hex, read in chunks: memory stays bounded.
std::string sha256_file(const fs::path& path);

} // namespace harness
