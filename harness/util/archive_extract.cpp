// Unpacking a .tar.zst safely: two passes, everything checked before anything is written.
#include "util/archive.hpp"
#include "util/archive_detail.hpp"

#include "util/error.hpp"
#include "util/quote.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <fcntl.h>
#include <fmt/format.h>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace harness {

using namespace archive_detail;

namespace {

struct ArchiveReadFree {
    void operator()(archive* a) const { archive_read_free(a); }
};
using ReadHandle = std::unique_ptr<archive, ArchiveReadFree>;


/// What the checks carry from one entry to the next.
struct ExtractState {
    std::uint64_t compressed_size = 0;
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
    std::set<std::string> files;
    std::set<std::string> directories;
};

struct CheckedEntry {
    std::string relative; // empty for the archive's own root ("./")
    bool directory = false;
    bool executable = false;
};

CheckedEntry check_entry(archive_entry* entry, const fs::path& archive_path, const ExtractLimits& limits,
                         ExtractState& state) {
    const char* raw = archive_entry_pathname(entry);
    if (raw == nullptr) {
        raw = archive_entry_pathname_utf8(entry);
    }
    const std::string name = raw != nullptr ? raw : "";
    auto refuse = [&](const std::string& why) {
        return HarnessError(fmt::format("{}: entry {}: {}", archive_path.string(), json_string(name), why));
    };
    if (name.empty()) {
        throw refuse("an entry without a path");
    }
    if (name.front() == '/') {
        throw refuse("an absolute path");
    }
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= name.size()) {
        const std::size_t slash = std::min(name.find('/', start), name.size());
        const std::string part = name.substr(start, slash - start);
        if (part == "..") {
            throw refuse("a path that leaves the target directory");
        }
        if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = slash + 1;
    }

    CheckedEntry checked;
    if (archive_entry_hardlink(entry) != nullptr) {
        throw refuse("a hard link (links are not unpacked)");
    }
    switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
        break;
    case AE_IFDIR:
        checked.directory = true;
        break;
    case AE_IFLNK:
        throw refuse("a symbolic link (links are not unpacked)");
    case AE_IFCHR:
    case AE_IFBLK:
        throw refuse("a device node");
    case AE_IFIFO:
        throw refuse("a FIFO");
    case AE_IFSOCK:
        throw refuse("a socket");
    default:
        throw refuse("an entry that is neither a file nor a directory");
    }
    checked.executable = (archive_entry_perm(entry) & 0111) != 0;

    if (++state.entries > limits.max_entries) {
        throw refuse(fmt::format("more than {} entries", limits.max_entries));
    }
    if (!checked.directory) {
        const std::int64_t size = archive_entry_size(entry);
        if (size < 0) {
            throw refuse("a negative size");
        }
        state.bytes += static_cast<std::uint64_t>(size);
        if (state.bytes > limits.max_bytes) {
            throw refuse(fmt::format("expands past the limit of {} bytes", limits.max_bytes));
        }
        const double ratio = static_cast<double>(state.bytes) / static_cast<double>(std::max<std::uint64_t>(state.compressed_size, 1));
        if (state.bytes > limits.ratio_floor && ratio > limits.max_ratio) {
            throw refuse(fmt::format("expands {:.0f} times the archive's {} bytes (the limit is {:.0f}): a decompression bomb?",
                                     ratio, state.compressed_size, limits.max_ratio));
        }
    }

    std::string prefix;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        prefix += (i == 0 ? "" : "/") + parts[i];
        if (i + 1 < parts.size() && state.files.count(prefix) != 0) {
            throw refuse(fmt::format("a path under the file {}", json_string(prefix)));
        }
    }
    checked.relative = prefix;
    if (checked.relative.empty()) {
        if (!checked.directory) {
            throw refuse("a file named like the target directory");
        }
        return checked;
    }
    if (state.files.count(prefix) != 0 || (!checked.directory && state.directories.count(prefix) != 0)) {
        throw refuse("a duplicate path");
    }
    (checked.directory ? state.directories : state.files).insert(prefix);
    return checked;
}

void make_directories(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        throw HarnessError(fmt::format("{}: cannot create: {}", dir.string(), ec.message()));
    }
}

ReadHandle open_for_reading(const fs::path& archive_path, int fd) {
    ReadHandle a(archive_read_new());
    if (!a) {
        throw HarnessError("archive: out of memory");
    }
    archive_read_support_filter_zstd(a.get());
    archive_read_support_format_tar(a.get());
    if (archive_read_open_fd(a.get(), fd, k_chunk) != ARCHIVE_OK) {
        throw HarnessError(fmt::format("{}: cannot open: {}", archive_path.string(), la_error(a.get())));
    }
    return a;
}

/// One pass over the archive: every header is checked; `dest_dir` empty means check only.
void read_pass(const fs::path& archive_path, const fs::path& dest_dir, const ExtractLimits& limits) {
    Fd fd(::open(archive_path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        throw HarnessError(fmt::format("{}: cannot read: {}", archive_path.string(), errno_text()));
    }
    if (!S_ISREG(info.st_mode)) {
        throw HarnessError(fmt::format("{}: not a file", archive_path.string()));
    }
    ExtractState state;
    state.compressed_size = static_cast<std::uint64_t>(info.st_size);
    const ReadHandle a = open_for_reading(archive_path, fd.get());
    std::vector<char> buffer(dest_dir.empty() ? 0 : k_chunk);
    for (;;) {
        check_interrupt();
        archive_entry* entry = nullptr;
        const int r = archive_read_next_header(a.get(), &entry);
        if (r == ARCHIVE_EOF) {
            break;
        }
        if (r < ARCHIVE_WARN) {
            throw HarnessError(fmt::format("{}: not a readable .tar.zst: {}", archive_path.string(), la_error(a.get())));
        }
        if (archive_filter_code(a.get(), 0) != ARCHIVE_FILTER_ZSTD) {
            throw HarnessError(fmt::format("{}: not zstd-compressed", archive_path.string()));
        }
        const CheckedEntry checked = check_entry(entry, archive_path, limits, state);
        const auto corrupt = [&] {
            return HarnessError(fmt::format("{}: entry {}: cannot read: {}", archive_path.string(),
                                            json_string(checked.relative), la_error(a.get())));
        };
        if (dest_dir.empty() || checked.directory || checked.relative.empty()) {
            if (archive_read_data_skip(a.get()) != ARCHIVE_OK) {
                throw corrupt();
            }
            if (!dest_dir.empty() && !checked.relative.empty()) {
                make_directories(dest_dir / checked.relative);
            }
            continue;
        }
        const fs::path target = dest_dir / checked.relative;
        make_directories(target.parent_path());
        const mode_t mode = checked.executable ? 0755 : 0644;
        Fd out(::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
        if (out.get() < 0) {
            throw HarnessError(fmt::format("{}: cannot create: {}", target.string(), errno_text()));
        }
        for (;;) {
            const la_ssize_t n = archive_read_data(a.get(), buffer.data(), buffer.size());
            if (n < 0) {
                throw corrupt();
            }
            if (n == 0) {
                break;
            }
            const char* data = buffer.data();
            auto left = static_cast<std::size_t>(n);
            while (left > 0) {
                const ssize_t w = ::write(out.get(), data, left);
                if (w < 0 && errno == EINTR) {
                    continue;
                }
                if (w < 0) {
                    throw HarnessError(fmt::format("{}: cannot write: {}", target.string(), errno_text()));
                }
                data += w;
                left -= static_cast<std::size_t>(w);
            }
            check_interrupt();
        }
        if (out.close() != 0) {
            throw HarnessError(fmt::format("{}: cannot write: {}", target.string(), errno_text()));
        }
    }
}

} // namespace

void extract_tar_zst_safely(const fs::path& archive, const fs::path& dest_dir, const ExtractLimits& limits) {
    fs::path dest = dest_dir.lexically_normal();
    if (!dest.empty() && dest.filename().empty()) {
        dest = dest.parent_path(); // "out/" names "out"
    }
    if (dest.empty() || dest == "." || dest == "..") {
        throw HarnessError(fmt::format("{}: not a directory to unpack into", json_string(dest_dir.string())));
    }
    read_pass(archive, {}, limits); // everything is checked before anything is written
    if (!dest.parent_path().empty()) {
        make_directories(dest.parent_path());
    }
    std::error_code ec;
    if (!fs::create_directory(dest, ec) || ec) {
        throw HarnessError(fmt::format("{}: cannot create a fresh directory to unpack into: {}", dest.string(),
                                       ec ? ec.message() : "it already exists"));
    }
    RemoveUnlessKept cleanup(dest);
    read_pass(archive, dest, limits); // the same checks again: the file may have changed since
    cleanup.keep();
}

} // namespace harness
