#pragma once
// Deterministic .tar.zst archives and their safe unpacking. Nothing here knows what a bundle
// holds: the writer takes entries one by one, from files or from memory, hashing each while it
// compresses it; the reader unpacks a tree, refusing anything that is not a plain file or a
// directory.
#include "util/limits.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace harness {

namespace fs = std::filesystem;

/// The mtime every entry gets: 2000-01-01T00:00:00Z (a fixed date tools do not warn about).
inline constexpr std::int64_t k_archive_mtime = 946684800;

/// What an entry (or the archive itself) holds: its size and sha256, lowercase hex.
struct ArchivedContent {
    std::uint64_t size = 0;
    std::string sha256;
};

/// A pax (restricted) tar compressed with zstd (util/zstd_stream.hpp), written in one pass.
/// Entries get a fixed mtime, uid/gid 0, no owner names, mode 0755 for directories and
/// owner-executable files and 0644 otherwise, and nothing else from the host; they are written
/// in the order they are added (sort them first for a reproducible archive). The same entries
/// always give the same bytes, whatever the worker count. Memory does not grow with the size of
/// the files; bench/README.md has the measured peak.
///
/// The archive is written under a temporary name beside `out_file` and renamed by finish():
/// an error, an interrupt (util/interrupt.hpp, checked between chunks) or destruction without
/// finish() removes the temporary file and leaves `out_file` as it was. After an error the
/// writer refuses further entries.
class TarZstWriter {
public:
    /// Creates the temporary file; `out_file`'s directory must exist. `threads` zstd workers,
    /// 0 for the hardware threads (see zstd_workers()).
    explicit TarZstWriter(const fs::path& out_file, int threads = 0);
    ~TarZstWriter();
    TarZstWriter(const TarZstWriter&) = delete;
    TarZstWriter& operator=(const TarZstWriter&) = delete;

    /// A directory entry `path/` (give `path` without the trailing slash).
    void add_directory(const std::string& path);
    /// The regular file `source` (a symbolic link or special file is refused) as `path`, read
    /// once in chunks: the same bytes are hashed and compressed. A file whose size changes while
    /// it is read throws HarnessError ("grew"/"shrank while it was packed").
    ArchivedContent add_file(const std::string& path, const fs::path& source);
    /// `content` as the file `path`.
    ArchivedContent add_bytes(const std::string& path, std::string_view content, bool executable = false);
    /// Ends the archive, syncs it and renames it to `out_file`. With `replace` false an
    /// `out_file` that appeared meanwhile is kept and HarnessError thrown (the check and the
    /// rename are one atomic step). Returns the archive's size and sha256, hashed as written.
    ArchivedContent finish(bool replace = true);

    const fs::path& out_file() const;

private:
    struct State;
    std::unique_ptr<State> m_state;
};

/// Packs every directory and regular file under `source_dir` as `<top_name>/...` entries,
/// sorted by entry name, with TarZstWriter (`threads` as there). A symlink or special file,
/// `out_file` inside `source_dir`, or any TarZstWriter error throws HarnessError and leaves no
/// archive.
void write_tar_zst(const fs::path& source_dir, const std::string& top_name, const fs::path& out_file, int threads);

/// The bounds of one unpacking; the defaults are util/limits.hpp's (raised there through the
/// environment). Sizes count fully uncompressed bytes: a gzip file inside the archive counts
/// what it inflates to, so that zstd squeezing an already compressed bomb cannot hide it.
struct ExtractLimits {
    /// All entries together.
    std::uint64_t max_bytes = input_limit(InputLimit::bundle_inflated_bytes);
    /// One entry.
    std::uint64_t max_file_bytes = input_limit(InputLimit::file_inflated_bytes);
    /// Uncompressed size over the archive's size on disk, checked past k_inflate_ratio_floor.
    double max_ratio = static_cast<double>(input_limit(InputLimit::inflate_ratio));
    std::uint64_t ratio_floor = k_inflate_ratio_floor;
    std::uint64_t max_entries = input_limit(InputLimit::bundle_entries);
};

/// Unpacks a .tar.zst into `dest_dir`, which it creates and which must not exist. A first pass
/// reads every entry and refuses, before anything is written: absolute paths, `..` components,
/// links of any kind (symbolic or hard), devices, FIFOs and sockets, duplicate paths, more than
/// `max_entries` entries, expansion past the size bounds or `max_ratio` (gzip entries inflated
/// on the fly to be counted, in bounded memory), and anything after the tar's end-of-archive
/// other than zero padding to the end of the one zstd frame (a second frame, appended data).
/// The second pass writes files with fixed modes (0644, or 0755 when any execute bit is set)
/// under the same checks; any failure removes `dest_dir` and throws HarnessError naming the
/// archive and the entry.
void extract_tar_zst_safely(const fs::path& archive, const fs::path& dest_dir, const ExtractLimits& limits = {});

/// Why the bytes of `archive` after its tar's end-of-archive are not just zero padding to the
/// end of one zstd frame, or empty when they are (what extract_tar_zst_safely checks). Reads the
/// whole stream once in bounded memory; a damaged stream is reported as such.
std::string tar_zst_trailing_problem(const fs::path& archive);

} // namespace harness
