// Unpacking a .tar.zst safely: two passes, everything checked before anything is written.
#include "util/archive.hpp"
#include "util/archive_detail.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/quote.hpp"
#include "util/scratch_dir.hpp"

#include <algorithm>
#include <array>
#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <fcntl.h>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include <zlib.h>
#include <zstd.h>

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
    std::uint64_t bytes = 0; ///< declared sizes, plus what gzip entries inflate to beyond theirs
    std::set<std::string> files;
    std::set<std::string> directories;
};

/// Counts what a gzip stream inflates to, in a fixed scratch buffer: nothing is kept. A damaged
/// stream just stops the count (the trace check says what is wrong with it); members back to
/// back (cat a.gz b.gz) all count, as every gzip reader inflates them all.
class GzipCounter {
public:
    GzipCounter() : m_scratch(std::size_t{64} << 10) {
        if (inflateInit2(&m_stream, 16 + MAX_WBITS) != Z_OK) {
            throw HarnessError("zlib: out of memory");
        }
    }
    ~GzipCounter() { inflateEnd(&m_stream); }
    GzipCounter(const GzipCounter&) = delete;
    GzipCounter& operator=(const GzipCounter&) = delete;

    /// Inflates `size` more compressed bytes; returns the uncompressed total so far, and stops
    /// early (returning it) once it passes `stop_after`.
    std::uint64_t feed(const char* data, std::size_t size, std::uint64_t stop_after) {
        m_stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
        m_stream.avail_in = static_cast<uInt>(size);
        while (!m_broken && m_stream.avail_in > 0 && m_inflated <= stop_after) {
            m_stream.next_out = reinterpret_cast<Bytef*>(m_scratch.data());
            m_stream.avail_out = static_cast<uInt>(m_scratch.size());
            const int rc = inflate(&m_stream, Z_NO_FLUSH);
            m_inflated += m_scratch.size() - m_stream.avail_out;
            if (rc == Z_STREAM_END) {
                inflateReset(&m_stream);
            } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
                m_broken = true;
            } else if (rc == Z_BUF_ERROR && m_stream.avail_out > 0) {
                break; // no progress possible with what is in hand
            }
        }
        return m_inflated;
    }

private:
    z_stream m_stream{};
    std::vector<char> m_scratch;
    std::uint64_t m_inflated = 0;
    bool m_broken = false;
};

bool starts_gzip(const char* data, std::size_t size) {
    return size >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

struct CheckedEntry {
    std::string relative; // empty for the archive's own root ("./")
    bool directory = false;
    bool executable = false;
    std::uint64_t size = 0; ///< as declared
};

/// Why adding `more` uncompressed bytes to the bundle (the entry now at `file_bytes`) breaks a
/// bound, or empty. The message names the variable that raises the bound.
std::string expansion_problem(std::uint64_t file_bytes, std::uint64_t more, const ExtractLimits& limits, ExtractState& state) {
    if (file_bytes > limits.max_file_bytes) {
        return fmt::format("expands past the limit of {} uncompressed bytes for one file (raise it with {}=SIZE)",
                           limits.max_file_bytes, input_limit_variable(InputLimit::file_inflated_bytes));
    }
    state.bytes += more;
    if (state.bytes > limits.max_bytes) {
        return fmt::format("expands past the limit of {} uncompressed bytes for a bundle (raise it with {}=SIZE)", limits.max_bytes,
                           input_limit_variable(InputLimit::bundle_inflated_bytes));
    }
    const double ratio = static_cast<double>(state.bytes) / static_cast<double>(std::max<std::uint64_t>(state.compressed_size, 1));
    if (state.bytes > limits.ratio_floor && ratio > limits.max_ratio) {
        return fmt::format("expands {:.0f} times the archive's {} bytes, counting gzip files inflated (the limit is "
                           "{:.0f}; raise it with {}=N): a decompression bomb?",
                           ratio, state.compressed_size, limits.max_ratio, input_limit_variable(InputLimit::inflate_ratio));
    }
    return {};
}

CheckedEntry check_entry(archive_entry* entry, const fs::path& archive_path, const ExtractLimits& limits, ExtractState& state) {
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
    case AE_IFREG: break;
    case AE_IFDIR: checked.directory = true; break;
    case AE_IFLNK: throw refuse("a symbolic link (links are not unpacked)");
    case AE_IFCHR:
    case AE_IFBLK: throw refuse("a device node");
    case AE_IFIFO: throw refuse("a FIFO");
    case AE_IFSOCK: throw refuse("a socket");
    default: throw refuse("an entry that is neither a file nor a directory");
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
        checked.size = static_cast<std::uint64_t>(size);
        if (const std::string why = expansion_problem(checked.size, checked.size, limits, state); !why.empty()) {
            throw refuse(why);
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
        throw_if_out_of_space(ec.value(), dir);
        throw HarnessError(fmt::format("{}: cannot create: {}", dir.string(), ec.message()));
    }
}

void write_all_to(int fd, const char* data, std::size_t left, const fs::path& target) {
    if (const int error_number = write_fully(fd, data, left); error_number != 0) {
        throw_if_out_of_space(error_number, target);
        throw HarnessError(fmt::format("{}: cannot write: {}", target.string(), errno_text()));
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

/// Creates an entry's file (never through a link, never over a file) and returns its descriptor.
int create_entry_file(const fs::path& target, bool executable) {
    make_directories(target.parent_path());
    const mode_t mode = executable ? 0755 : 0644;
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        throw_if_out_of_space(errno, target);
        throw HarnessError(fmt::format("{}: cannot create: {}", target.string(), errno_text()));
    }
    return fd;
}

/// Reads an entry's data, writing it to `out` when there is one. Both passes read the data: a
/// gzip file counts what it inflates to, not its size.
void read_entry_data(archive* a, const CheckedEntry& checked, const fs::path& archive_path, const ExtractLimits& limits,
                     ExtractState& state, std::vector<char>& buffer, Fd* out, const fs::path& target) {
    std::unique_ptr<GzipCounter> gzip;
    std::uint64_t counted = checked.size;
    bool first = true;
    for (;;) {
        const la_ssize_t n = archive_read_data(a, buffer.data(), buffer.size());
        if (n < 0) {
            throw HarnessError(
                fmt::format("{}: entry {}: cannot read: {}", archive_path.string(), json_string(checked.relative), la_error(a)));
        }
        if (n == 0) {
            break;
        }
        const auto got = static_cast<std::size_t>(n);
        if (first && starts_gzip(buffer.data(), got)) {
            gzip = std::make_unique<GzipCounter>();
        }
        first = false;
        if (gzip) {
            const std::uint64_t inflated = gzip->feed(buffer.data(), got, limits.max_file_bytes);
            if (inflated > counted) {
                if (const std::string why = expansion_problem(inflated, inflated - counted, limits, state); !why.empty()) {
                    throw HarnessError(
                        fmt::format("{}: entry {}: gzip data that {}", archive_path.string(), json_string(checked.relative), why));
                }
                counted = inflated;
            }
        }
        if (out != nullptr) {
            write_all_to(out->get(), buffer.data(), got, target);
        }
        check_interrupt();
    }
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
    std::vector<char> buffer(k_chunk);
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
        if (checked.directory || checked.relative.empty()) {
            if (archive_read_data_skip(a.get()) != ARCHIVE_OK) {
                throw HarnessError(fmt::format("{}: entry {}: cannot read: {}", archive_path.string(), json_string(checked.relative),
                                               la_error(a.get())));
            }
            if (!dest_dir.empty() && !checked.relative.empty()) {
                make_directories(dest_dir / checked.relative);
            }
            continue;
        }
        const fs::path target = dest_dir.empty() ? fs::path() : dest_dir / checked.relative;
        std::optional<Fd> out;
        if (!dest_dir.empty()) {
            out.emplace(create_entry_file(target, checked.executable));
        }
        read_entry_data(a.get(), checked, archive_path, limits, state, buffer, out ? &*out : nullptr, target);
        if (out && out->close() != 0) {
            throw_if_out_of_space(errno, target);
            throw HarnessError(fmt::format("{}: cannot write: {}", target.string(), errno_text()));
        }
    }
    if (dest_dir.empty()) {
        if (const std::string why = tar_zst_trailing_problem(archive_path); !why.empty()) {
            throw HarnessError(fmt::format("{}: {}", archive_path.string(), why));
        }
    }
}

/// Follows a tar stream block by block as it goes by: headers, their data (sizes from the
/// header or a pax `size=` record), the end-of-archive (the first all-zero header block, where
/// libarchive stops too), and after it nothing but zeros.
class TarWalk {
public:
    /// Takes the next `size` bytes of the tar; false once a problem is found.
    bool feed(const char* data, std::size_t size) {
        while (size > 0 && m_problem.empty()) {
            if (m_ended) {
                for (std::size_t i = 0; i < size; ++i) {
                    if (data[i] != '\0') {
                        m_problem = fmt::format("data after the tar's end-of-archive (uncompressed byte {}): a bundle is "
                                                "one tar, padded with zeros at most",
                                                m_offset + i);
                        return false;
                    }
                }
                m_offset += size;
                return true;
            }
            std::size_t take = 0;
            if (m_data_left > 0) {
                take = static_cast<std::size_t>(std::min<std::uint64_t>(m_data_left, size));
                if (m_collecting_pax) {
                    m_pax.append(data, std::min<std::size_t>(take, m_pax_wanted - m_pax.size()));
                }
                m_data_left -= take;
                if (m_data_left == 0 && m_collecting_pax) {
                    m_collecting_pax = false;
                    m_pax_size = pax_size(m_pax);
                }
            } else {
                take = std::min(size, m_block.size() - m_fill);
                std::copy(data, data + take, m_block.begin() + static_cast<std::ptrdiff_t>(m_fill));
                m_fill += take;
                if (m_fill == m_block.size()) {
                    m_fill = 0;
                    header();
                }
            }
            data += take;
            size -= take;
            m_offset += take;
        }
        return m_problem.empty();
    }
    bool ended() const { return m_ended; }
    const std::string& problem() const { return m_problem; }

private:
    static constexpr std::size_t k_block = 512;
    /// pax headers hold a few long names and numbers; a larger one is not read for its size.
    static constexpr std::size_t k_max_pax = std::size_t{1} << 20;

    void header() {
        if (std::all_of(m_block.begin(), m_block.end(), [](char c) { return c == '\0'; })) {
            m_ended = true;
            return;
        }
        const char type = m_block[156];
        std::optional<std::uint64_t> size = size_field();
        if (!size) {
            m_problem = fmt::format("a tar header with an unreadable size (uncompressed byte {})", m_offset + 1 - k_block);
            return;
        }
        const bool pax = type == 'x' || type == 'X';
        if (!pax && m_pax_size) {
            size = m_pax_size;
        }
        if (!pax) {
            m_pax_size.reset();
        }
        m_collecting_pax = pax && *size <= k_max_pax;
        m_pax.clear();
        m_data_left = (*size + k_block - 1) / k_block * k_block; // data, padded to whole blocks
        m_pax_wanted = m_collecting_pax ? static_cast<std::size_t>(*size) : 0;
        if (m_collecting_pax && m_data_left == 0) {
            m_collecting_pax = false;
        }
    }

    std::optional<std::uint64_t> size_field() const {
        const auto* field = reinterpret_cast<const unsigned char*>(m_block.data() + 124);
        std::uint64_t value = 0;
        if ((field[0] & 0x80) != 0) { // base-256, for sizes octal cannot hold
            for (int i = 0; i < 12; ++i) {
                if (value >> 56 != 0) {
                    return std::nullopt;
                }
                value = (value << 8) | (i == 0 ? field[0] & 0x7fU : field[i]);
            }
            return value;
        }
        int i = 0;
        while (i < 12 && (field[i] == ' ' || field[i] == '\0')) {
            ++i;
        }
        for (; i < 12 && field[i] >= '0' && field[i] <= '7'; ++i) {
            value = value * 8 + static_cast<std::uint64_t>(field[i] - '0');
        }
        return value;
    }

    /// The `size` record of pax extended-header data ("<len> size=<n>\n" records), if any.
    static std::optional<std::uint64_t> pax_size(const std::string& records) {
        std::optional<std::uint64_t> found;
        std::size_t at = 0;
        while (at < records.size()) {
            std::size_t length = 0;
            std::size_t i = at;
            for (; i < records.size() && records[i] >= '0' && records[i] <= '9' && length < k_max_pax; ++i) {
                length = length * 10 + static_cast<std::size_t>(records[i] - '0');
            }
            if (length == 0 || at + length > records.size() || i >= records.size() || records[i] != ' ') {
                break;
            }
            const std::string_view record = std::string_view(records).substr(i + 1, at + length - i - 1);
            if (record.rfind("size=", 0) == 0) {
                std::uint64_t value = 0;
                for (const char c : record.substr(5)) {
                    if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) {
                        break;
                    }
                    value = value * 10 + static_cast<std::uint64_t>(c - '0');
                }
                found = value;
            }
            at += length;
        }
        return found;
    }

    std::array<char, k_block> m_block{};
    std::size_t m_fill = 0;
    std::uint64_t m_data_left = 0;
    std::size_t m_pax_wanted = 0;
    std::uint64_t m_offset = 0;
    bool m_collecting_pax = false;
    std::string m_pax;
    std::optional<std::uint64_t> m_pax_size;
    bool m_ended = false;
    std::string m_problem;
};

struct DctxFree {
    void operator()(ZSTD_DCtx* dctx) const { ZSTD_freeDCtx(dctx); }
};

} // namespace

std::string tar_zst_trailing_problem(const fs::path& archive_path) {
    Fd fd(::open(archive_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        return fmt::format("cannot read: {}", errno_text());
    }
    const std::unique_ptr<ZSTD_DCtx, DctxFree> dctx(ZSTD_createDCtx());
    if (!dctx) {
        throw HarnessError("zstd: out of memory");
    }
    std::vector<char> in_buffer(ZSTD_DStreamInSize());
    std::vector<char> out_buffer(ZSTD_DStreamOutSize());
    TarWalk walk;
    bool frame_done = false;
    for (;;) {
        check_interrupt();
        const ssize_t n = ::read(fd.get(), in_buffer.data(), in_buffer.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return fmt::format("cannot read: {}", errno_text());
        }
        if (n == 0) {
            break;
        }
        ZSTD_inBuffer in{in_buffer.data(), static_cast<std::size_t>(n), 0};
        if (frame_done) {
            return "data after the zstd frame (a second frame or appended bytes): a bundle is one frame";
        }
        for (;;) {
            ZSTD_outBuffer out{out_buffer.data(), out_buffer.size(), 0};
            const std::size_t left = ZSTD_decompressStream(dctx.get(), &out, &in);
            if (ZSTD_isError(left) != 0U) {
                return fmt::format("damaged zstd stream: {}", ZSTD_getErrorName(left));
            }
            if (!walk.feed(out_buffer.data(), out.pos)) {
                return walk.problem();
            }
            if (left == 0) {
                frame_done = true;
                if (in.pos < in.size) {
                    return "data after the zstd frame (a second frame or appended bytes): a bundle is one frame";
                }
                break;
            }
            if (in.pos == in.size && out.pos < out.size) {
                break;
            }
        }
    }
    if (!frame_done) {
        return "the zstd stream ends before its frame does (truncated)";
    }
    if (!walk.ended()) {
        return "the tar has no end-of-archive block";
    }
    return {};
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
        throw_if_out_of_space(ec.value(), dest);
        throw HarnessError(fmt::format("{}: cannot create a fresh directory to unpack into: {}", dest.string(),
                                       ec ? ec.message() : "it already exists"));
    }
    RemoveUnlessKept cleanup(dest);
    read_pass(archive, dest, limits); // the same checks again: the file may have changed since
    cleanup.keep();
}

} // namespace harness
