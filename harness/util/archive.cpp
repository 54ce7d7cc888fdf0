// Writing .tar.zst archives: libarchive frames the tar, util/zstd_stream compresses it.
#include "util/archive.hpp"
#include "util/archive_detail.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/sha256.hpp"
#include "util/walk.hpp"
#include "util/zstd_stream.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace harness {

using namespace archive_detail;

namespace {

struct ArchiveWriteFree {
    void operator()(archive* a) const {
        // After a failure, free() would otherwise "close cleanly": pad the current entry to its
        // declared size (gigabytes of zeros through zstd) before the temporary file is removed.
        archive_write_fail(a);
        archive_write_free(a);
    }
};
struct EntryFree {
    void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using WriteHandle = std::unique_ptr<archive, ArchiveWriteFree>;
using EntryHandle = std::unique_ptr<archive_entry, EntryFree>;

EntryHandle fixed_entry(const std::string& name, bool directory, bool executable, std::uint64_t size) {
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
    archive_entry_set_size(entry.get(), directory ? 0 : static_cast<la_int64_t>(size));
    archive_entry_set_mtime(entry.get(), k_archive_mtime, 0);
    archive_entry_set_uid(entry.get(), 0);
    archive_entry_set_gid(entry.get(), 0);
    return entry;
}

void check_entry_name(const std::string& name) {
    if (const std::string why = relative_name_problem(name); !why.empty()) {
        throw HarnessError(fmt::format("archive entry {}: {}", json_string(name), why));
    }
}

void write_all(int fd, const char* data, std::size_t size, const fs::path& file) {
    if (write_fully(fd, data, size) != 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", file.string(), errno_text()));
    }
}

/// rename(2) that never replaces an existing file.
int rename_no_replace(const char* from, const char* to) {
    if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) {
        return 0;
    }
    if (errno != EINVAL && errno != ENOSYS) {
        return -1;
    }
    // A file system without RENAME_NOREPLACE: link(2) refuses an existing target just as well.
    if (::link(from, to) != 0) {
        return -1;
    }
    ::unlink(from);
    return 0;
}

} // namespace

// ---- TarZstWriter ----

// Members are destroyed in reverse order: libarchive first (it must not write any more), then
// the compressor (joins its workers), the descriptor, and last the temporary file.
struct TarZstWriter::State {
    fs::path out_file;
    std::string temp;
    std::unique_ptr<RemoveUnlessKept> cleanup;
    std::unique_ptr<Fd> fd;
    Sha256 archive_hash;
    std::uint64_t archive_bytes = 0;
    std::unique_ptr<ZstdStream> zstd;
    WriteHandle a;
    std::exception_ptr sink_error; ///< what stopped the compressor inside a libarchive callback
    std::vector<char> buffer;
    bool failed = false;
    bool finished = false;
    bool abandoned = false;

    ~State() {
        if (a && !finished) {
            // Closing is what frees libarchive's output state; after archive_write_fail it skips
            // the padding of the open entry, and the callback refuses the end-of-archive blocks.
            abandoned = true;
            archive_write_fail(a.get());
            archive_write_close(a.get());
        }
    }

    /// The libarchive failure, or the exception our callback could not throw through C.
    [[noreturn]] void fail(const std::string& what) {
        failed = true;
        if (sink_error) {
            std::rethrow_exception(sink_error);
        }
        throw HarnessError(fmt::format("{}: {}: {}", out_file.string(), what, la_error(a.get())));
    }

    void usable() const {
        if (failed || finished) {
            throw HarnessError(
                fmt::format("{}: the archive is {}", out_file.string(), failed ? "broken by an earlier error" : "finished"));
        }
    }

    void header(const std::string& name, bool directory, bool executable, std::uint64_t size) {
        const EntryHandle entry = fixed_entry(name, directory, executable, size);
        if (archive_write_header(a.get(), entry.get()) < ARCHIVE_WARN) {
            fail(fmt::format("cannot add {}", json_string(name)));
        }
    }

    void data(const std::string& name, const char* bytes, std::size_t size) {
        if (archive_write_data(a.get(), bytes, size) != static_cast<la_ssize_t>(size)) {
            fail(fmt::format("cannot add {}", json_string(name)));
        }
    }

    /// libarchive's output: the uncompressed tar stream.
    static la_ssize_t compress(archive* a, void* client, const void* buffer, std::size_t length) {
        auto* state = static_cast<State*>(client);
        if (state->abandoned) {
            archive_set_error(a, ECANCELED, "archive abandoned");
            return -1;
        }
        try {
            state->zstd->write(buffer, length);
            return static_cast<la_ssize_t>(length);
        } catch (...) {
            // Exceptions cannot cross libarchive's C frames: fail() rethrows this one.
            state->sink_error = std::current_exception();
            archive_set_error(a, EIO, "compression stopped");
            return -1;
        }
    }
};

TarZstWriter::TarZstWriter(const fs::path& out_file, int threads) : m_state(std::make_unique<State>()) {
    State& s = *m_state;
    s.out_file = out_file;
    const fs::path dir = out_file.parent_path().empty() ? fs::path(".") : out_file.parent_path();
    s.temp = (dir / ("." + out_file.filename().string() + ".tmp-XXXXXX")).string();
    const int fd = ::mkstemp(s.temp.data());
    if (fd < 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", out_file.string(), errno_text()));
    }
    s.fd = std::make_unique<Fd>(fd);
    s.cleanup = std::make_unique<RemoveUnlessKept>(s.temp);
    State* state = m_state.get();
    s.zstd = std::make_unique<ZstdStream>(zstd_workers(threads), [state](const char* data, std::size_t size) {
        state->archive_hash.update(data, size);
        write_all(state->fd->get(), data, size, state->out_file);
        state->archive_bytes += size;
    });
    s.a.reset(archive_write_new());
    if (!s.a) {
        throw HarnessError("archive: out of memory");
    }
    if (archive_write_set_format_pax_restricted(s.a.get()) != ARCHIVE_OK) {
        s.fail("cannot set the tar format");
    }
    // No blocking: each write reaches the compressor as it is, without a copy into 10 KB blocks.
    archive_write_set_bytes_per_block(s.a.get(), 0);
    if (archive_write_open(s.a.get(), state, nullptr, &State::compress, nullptr) != ARCHIVE_OK) {
        s.fail("cannot start the archive");
    }
    s.buffer.resize(k_chunk);
}

TarZstWriter::~TarZstWriter() = default;

const fs::path& TarZstWriter::out_file() const { return m_state->out_file; }

void TarZstWriter::add_directory(const std::string& path) {
    State& s = *m_state;
    s.usable();
    check_entry_name(path);
    check_interrupt();
    s.header(path + "/", true, true, 0);
}

ArchivedContent TarZstWriter::add_bytes(const std::string& path, std::string_view content, bool executable) {
    State& s = *m_state;
    s.usable();
    check_entry_name(path);
    check_interrupt();
    s.header(path, false, executable, content.size());
    Sha256 hash;
    hash.update(content.data(), content.size());
    s.data(path, content.data(), content.size());
    return {content.size(), hash.finish()};
}

ArchivedContent TarZstWriter::add_file(const std::string& path, const fs::path& source) {
    State& s = *m_state;
    s.usable();
    check_entry_name(path);
    check_interrupt();
    Fd fd(::open(source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        throw HarnessError(fmt::format("{}: cannot read: {}", source.string(), errno == ELOOP ? "a symbolic link" : errno_text()));
    }
    if (!S_ISREG(info.st_mode)) {
        throw HarnessError(fmt::format("{}: refusing to pack something other than a regular file", source.string()));
    }
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    const auto expected = static_cast<std::uint64_t>(info.st_size);
    s.header(path, false, (info.st_mode & S_IXUSR) != 0, expected);
    Sha256 hash;
    std::uint64_t total = 0;
    for (;;) {
        check_interrupt();
        // Read one byte past the expected size at most, to notice a file still being written.
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(s.buffer.size(), expected - total + 1));
        const ssize_t n = ::read(fd.get(), s.buffer.data(), want);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            s.failed = true;
            throw HarnessError(fmt::format("{}: cannot read: {}", source.string(), errno_text()));
        }
        if (n == 0) {
            break;
        }
        total += static_cast<std::uint64_t>(n);
        if (total > expected) {
            break;
        }
        hash.update(s.buffer.data(), static_cast<std::size_t>(n));
        s.data(path, s.buffer.data(), static_cast<std::size_t>(n));
    }
    if (total != expected) {
        s.failed = true;
        throw HarnessError(fmt::format("{}: {} while it was packed", source.string(), total > expected ? "grew" : "shrank"));
    }
    return {expected, hash.finish()};
}

ArchivedContent TarZstWriter::finish(bool replace) {
    State& s = *m_state;
    s.usable();
    check_interrupt();
    if (archive_write_close(s.a.get()) != ARCHIVE_OK) {
        s.fail("cannot finish the archive");
    }
    s.failed = true; // until the rename: any error below leaves nothing to add to
    s.zstd->finish();
    const int fd = s.fd->get();
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0 || s.fd->close() != 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", s.out_file.string(), errno_text()));
    }
    check_interrupt();
    const int renamed = replace ? ::rename(s.temp.c_str(), s.out_file.c_str()) : rename_no_replace(s.temp.c_str(), s.out_file.c_str());
    if (renamed != 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", s.out_file.string(),
                                       errno == EEXIST ? "it exists (written meanwhile by something else?)" : errno_text()));
    }
    s.cleanup->keep();
    s.failed = false;
    s.finished = true;
    return {s.archive_bytes, s.archive_hash.finish()};
}

// ---- a whole directory ----

namespace {

struct SourceEntry {
    std::string name; // the entry name, '/'-terminated for a directory
    fs::path source;
};

std::vector<SourceEntry> list_source(const fs::path& source_dir, const std::string& top_name) {
    std::vector<SourceEntry> entries;
    const Tree tree = walk_tree(source_dir);
    for (const TreeEntry& entry : tree.entries) {
        const std::string name = top_name + "/" + entry.relative;
        if (entry.type == fs::file_type::directory) {
            entries.push_back({name + "/", {}});
        } else if (entry.type == fs::file_type::regular) {
            entries.push_back({name, entry.path});
        } else if (entry.type == fs::file_type::symlink) {
            throw HarnessError(fmt::format("{}: refusing to pack a symbolic link", json_string(entry.path.string())));
        } else {
            throw HarnessError(fmt::format("{}: refusing to pack a special file", json_string(entry.path.string())));
        }
    }
    if (tree.error) {
        throw HarnessError(fmt::format("{}: cannot list: {}", source_dir.string(), tree.error.message()));
    }
    std::sort(entries.begin(), entries.end(), [](const SourceEntry& a, const SourceEntry& b) { return a.name < b.name; });
    return entries;
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
        throw HarnessError(fmt::format("{}: the archive cannot be written inside the directory it packs ({})", out_file.string(),
                                       source_dir.string()));
    }
    const std::vector<SourceEntry> entries = list_source(source_dir, top_name);
    TarZstWriter writer(out_file, threads);
    writer.add_directory(top_name);
    for (const SourceEntry& entry : entries) {
        if (entry.source.empty()) {
            writer.add_directory(entry.name.substr(0, entry.name.size() - 1));
        } else {
            writer.add_file(entry.name, entry.source);
        }
    }
    writer.finish();
}

} // namespace harness
