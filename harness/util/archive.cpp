#include "util/archive.hpp"

#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <memory>
#include <openssl/evp.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace harness {

namespace {

constexpr std::size_t k_chunk = std::size_t{1} << 20;

struct ArchiveWriteFree {
    void operator()(archive* a) const {
        // After a failure, free() would otherwise "close cleanly": pad the current entry to its
        // declared size (gigabytes of zeros through zstd) before the temporary file is removed.
        archive_write_fail(a);
        archive_write_free(a);
    }
};
struct ArchiveReadFree {
    void operator()(archive* a) const { archive_read_free(a); }
};
struct EntryFree {
    void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using WriteHandle = std::unique_ptr<archive, ArchiveWriteFree>;
using ReadHandle = std::unique_ptr<archive, ArchiveReadFree>;
using EntryHandle = std::unique_ptr<archive_entry, EntryFree>;

/// A file descriptor closed on every path out.
class Fd {
public:
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }
    /// Closes now, reporting the error a deferred close would have swallowed.
    int close() {
        const int fd = m_fd;
        m_fd = -1;
        return ::close(fd);
    }

private:
    int m_fd;
};

/// Removes a path on destruction unless the work that produced it completed.
class RemoveUnlessKept {
public:
    explicit RemoveUnlessKept(fs::path path) : m_path(std::move(path)) {}
    ~RemoveUnlessKept() {
        if (!m_kept) {
            std::error_code ec;
            fs::remove_all(m_path, ec);
        }
    }
    RemoveUnlessKept(const RemoveUnlessKept&) = delete;
    RemoveUnlessKept& operator=(const RemoveUnlessKept&) = delete;
    void keep() { m_kept = true; }

private:
    fs::path m_path;
    bool m_kept = false;
};

std::string la_error(archive* a) {
    const char* message = archive_error_string(a);
    return message != nullptr ? message : "unknown libarchive error";
}

std::string errno_text() { return std::strerror(errno); }

void check_interrupt() {
    if (interrupt_signal() != 0) {
        throw HarnessError("interrupted", k_exit_interrupted);
    }
}

// ---- packing ----

struct SourceEntry {
    std::string relative; // generic form, '/' separated
    bool directory = false;
};

std::vector<SourceEntry> list_source(const fs::path& source_dir) {
    std::vector<SourceEntry> entries;
    std::error_code ec;
    fs::recursive_directory_iterator it(source_dir, ec);
    const fs::recursive_directory_iterator end;
    for (; !ec && it != end; it.increment(ec)) {
        const fs::file_status status = it->symlink_status(ec);
        if (ec) {
            break;
        }
        const std::string relative = it->path().lexically_relative(source_dir).generic_string();
        if (fs::is_directory(status)) {
            entries.push_back({relative, true});
        } else if (fs::is_regular_file(status)) {
            entries.push_back({relative, false});
        } else if (fs::is_symlink(status)) {
            throw HarnessError(fmt::format("{}: refusing to pack a symbolic link", json_string(it->path().string())));
        } else {
            throw HarnessError(fmt::format("{}: refusing to pack a special file", json_string(it->path().string())));
        }
    }
    if (ec) {
        throw HarnessError(fmt::format("{}: cannot list: {}", source_dir.string(), ec.message()));
    }
    std::sort(entries.begin(), entries.end(),
              [](const SourceEntry& a, const SourceEntry& b) { return a.relative < b.relative; });
    return entries;
}

bool is_inside(const fs::path& path, const fs::path& dir) {
    const fs::path p = fs::weakly_canonical(path);
    const fs::path d = fs::weakly_canonical(dir);
    auto pi = p.begin();
    for (auto di = d.begin(); di != d.end(); ++di, ++pi) {
        if (di->empty()) {
            continue; // a trailing separator
        }
        if (pi == p.end() || *pi != *di) {
            return false;
        }
    }
    return true;
}

EntryHandle fixed_entry(const std::string& name, bool directory, bool executable, std::int64_t size) {
    EntryHandle entry(archive_entry_new());
    if (!entry) {
        throw HarnessError("archive: out of memory");
    }
    // The harness never calls setlocale, so libarchive converts names from "C": ASCII names get
    // plain ustar headers, others a pax header with their bytes as they are (hdrcharset=BINARY),
    // the same on every host. (Setting the name as UTF-8 instead crashes libarchive 3.6.2's pax
    // writer in the "C" locale.)
    archive_entry_set_pathname(entry.get(), name.c_str());
    archive_entry_set_filetype(entry.get(), directory ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry.get(), directory || executable ? 0755 : 0644);
    archive_entry_set_size(entry.get(), directory ? 0 : size);
    archive_entry_set_mtime(entry.get(), k_archive_mtime, 0);
    archive_entry_set_uid(entry.get(), 0);
    archive_entry_set_gid(entry.get(), 0);
    return entry;
}

void write_header(archive* a, archive_entry* entry, const std::string& name) {
    if (archive_write_header(a, entry) < ARCHIVE_WARN) {
        throw HarnessError(fmt::format("{}: cannot add to the archive: {}", json_string(name), la_error(a)));
    }
}

void write_file_entry(archive* a, const fs::path& file, const std::string& name, std::vector<char>& buffer) {
    Fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        throw HarnessError(fmt::format("{}: cannot read: {}", file.string(), errno_text()));
    }
    if (!S_ISREG(info.st_mode)) {
        throw HarnessError(fmt::format("{}: changed into something other than a file while packing", file.string()));
    }
    const bool executable = (info.st_mode & S_IXUSR) != 0;
    const EntryHandle entry = fixed_entry(name, false, executable, static_cast<std::int64_t>(info.st_size));
    write_header(a, entry.get(), name);
    const auto expected = static_cast<std::uint64_t>(info.st_size);
    std::uint64_t total = 0;
    for (;;) {
        check_interrupt();
        // Read one byte past the expected size at most, to notice a file still being written.
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), expected - total + 1));
        const ssize_t n = ::read(fd.get(), buffer.data(), want);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw HarnessError(fmt::format("{}: cannot read: {}", file.string(), errno_text()));
        }
        if (n == 0) {
            break;
        }
        total += static_cast<std::uint64_t>(n);
        if (total > expected) {
            break;
        }
        const la_ssize_t written = archive_write_data(a, buffer.data(), static_cast<std::size_t>(n));
        if (written != static_cast<la_ssize_t>(n)) {
            throw HarnessError(fmt::format("{}: cannot add to the archive: {}", json_string(name), la_error(a)));
        }
    }
    if (total != expected) {
        throw HarnessError(fmt::format("{}: {} while it was packed", file.string(), total > expected ? "grew" : "shrank"));
    }
}

// ---- unpacking ----

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

void write_tar_zst(const fs::path& source_dir, const std::string& top_name, const fs::path& out_file, int threads) {
    if (top_name.empty() || top_name == "." || top_name == ".." || top_name.find('/') != std::string::npos) {
        throw HarnessError(fmt::format("archive top directory {}: expected one path component", json_string(top_name)));
    }
    if (!fs::is_directory(source_dir)) {
        throw HarnessError(fmt::format("{}: not a directory", source_dir.string()));
    }
    if (is_inside(out_file, source_dir)) {
        throw HarnessError(fmt::format("{}: the archive cannot be written inside the directory it packs ({})",
                                       out_file.string(), source_dir.string()));
    }
    const std::vector<SourceEntry> entries = list_source(source_dir);

    std::string temp = out_file.string() + ".tmp-XXXXXX";
    Fd fd(::mkstemp(temp.data()));
    if (fd.get() < 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", out_file.string(), errno_text()));
    }
    RemoveUnlessKept cleanup(temp);

    WriteHandle a(archive_write_new());
    if (!a) {
        throw HarnessError("archive: out of memory");
    }
    const auto fail = [&](const char* what) {
        return HarnessError(fmt::format("{}: {}: {}", out_file.string(), what, la_error(a.get())));
    };
    if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK) {
        throw fail("cannot set the tar format");
    }
    if (archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK) {
        throw fail("cannot use zstd");
    }
    archive_write_set_filter_option(a.get(), "zstd", "compression-level", "3");
    // zstd cuts multi-threaded input into jobs of a fixed size, so 1, 2, 8 or 32 workers give the
    // same bytes (measured); 0 is its separate single-thread mode, so never ask for it.
    archive_write_set_filter_option(a.get(), "zstd", "threads", std::to_string(std::max(threads, 1)).c_str());
    if (archive_write_open_fd(a.get(), fd.get()) != ARCHIVE_OK) {
        throw fail("cannot start the archive");
    }

    const EntryHandle top = fixed_entry(top_name + "/", true, true, 0);
    write_header(a.get(), top.get(), top_name + "/");
    std::vector<char> buffer(k_chunk);
    for (const SourceEntry& source : entries) {
        check_interrupt();
        const std::string name = top_name + "/" + source.relative;
        if (source.directory) {
            const EntryHandle entry = fixed_entry(name + "/", true, true, 0);
            write_header(a.get(), entry.get(), name + "/");
        } else {
            write_file_entry(a.get(), source_dir / source.relative, name, buffer);
        }
    }
    if (archive_write_close(a.get()) != ARCHIVE_OK) {
        throw fail("cannot finish the archive");
    }
    if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0 || fd.close() != 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", out_file.string(), errno_text()));
    }
    if (::rename(temp.c_str(), out_file.c_str()) != 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", out_file.string(), errno_text()));
    }
    cleanup.keep();
}

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

std::string sha256_file(const fs::path& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        throw HarnessError(fmt::format("{}: cannot read: {}", path.string(), errno_text()));
    }
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
        throw HarnessError("sha256: digest failed");
    }
    std::vector<char> buffer(k_chunk);
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw HarnessError(fmt::format("{}: cannot read: {}", path.string(), errno_text()));
        }
        if (n == 0) {
            break;
        }
        if (EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(n)) != 1) {
            throw HarnessError("sha256: digest failed");
        }
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context.get(), digest, &length) != 1) {
        throw HarnessError("sha256: digest failed");
    }
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * length);
    for (unsigned int i = 0; i < length; ++i) {
        hex += k_hex[digest[i] >> 4];
        hex += k_hex[digest[i] & 0xf];
    }
    return hex;
}

} // namespace harness
