#include "util/byte_source.hpp"

#include "util/error.hpp"
#include "util/interrupt.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <vector>
#include <zlib.h>

namespace harness {

namespace {

constexpr std::size_t k_compressed_chunk = std::size_t{1} << 20;

/// std::FILE rather than iostreams: one buffered fread per piece, and errno for the message.
class FileHandle {
public:
    explicit FileHandle(const fs::path& path) : m_path(path), m_file(std::fopen(path.c_str(), "rb")) {
        if (m_file == nullptr) {
            throw input_error(fmt::format("{}: cannot open trace: {}", path.string(), std::strerror(errno)));
        }
    }
    ~FileHandle() { std::fclose(m_file); }
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;

    std::size_t read(char* out, std::size_t max) {
        throw_if_interrupted(); // one check per buffer: Ctrl-C on a large trace ends promptly
        const std::size_t got = std::fread(out, 1, max, m_file);
        if (got < max && std::ferror(m_file) != 0) {
            throw HarnessError(fmt::format("{}: read error: {}", m_path.string(), std::strerror(errno)));
        }
        return got;
    }
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
    std::FILE* m_file;
};

class PlainSource final : public ByteSource {
public:
    PlainSource(std::unique_ptr<FileHandle> file, std::vector<char> head) : m_file(std::move(file)), m_head(std::move(head)) {}

    std::size_t read(char* out, std::size_t max) override {
        if (m_head_used < m_head.size()) {
            const std::size_t n = std::min(max, m_head.size() - m_head_used);
            std::memcpy(out, m_head.data() + m_head_used, n);
            m_head_used += n;
            return n;
        }
        return m_file->read(out, max);
    }
    bool compressed() const override { return false; }

private:
    std::unique_ptr<FileHandle> m_file;
    std::vector<char> m_head; ///< the bytes read to sniff the format, handed out first
    std::size_t m_head_used = 0;
};

class GzipSource final : public ByteSource {
public:
    GzipSource(std::unique_ptr<FileHandle> file, std::vector<char> head) : m_file(std::move(file)), m_in(std::move(head)) {
        const std::size_t sniffed = m_in.size();
        m_in.resize(std::max(sniffed, k_compressed_chunk));
        std::memset(&m_stream, 0, sizeof(m_stream));
        // 16 + MAX_WBITS: gzip framing only, so a raw zlib stream is not mistaken for a trace.
        if (inflateInit2(&m_stream, 16 + MAX_WBITS) != Z_OK) {
            throw HarnessError(fmt::format("{}: cannot start gzip decompression", m_file->path().string()));
        }
        m_stream.next_in = reinterpret_cast<Bytef*>(m_in.data());
        m_stream.avail_in = static_cast<uInt>(sniffed);
    }
    ~GzipSource() override { inflateEnd(&m_stream); }
    GzipSource(const GzipSource&) = delete;
    GzipSource& operator=(const GzipSource&) = delete;

    std::size_t read(char* out, std::size_t max) override {
        m_stream.next_out = reinterpret_cast<Bytef*>(out);
        m_stream.avail_out = static_cast<uInt>(std::min<std::size_t>(max, 1U << 30));
        while (m_stream.avail_out > 0 && !m_done) {
            if (m_stream.avail_in == 0) {
                const std::size_t got = m_file->read(m_in.data(), m_in.size());
                if (got == 0) {
                    if (m_member_started) {
                        throw input_error(fmt::format("{}: truncated gzip stream after {} compressed bytes", m_file->path().string(),
                                                      m_stream.total_in + m_consumed_before));
                    }
                    m_done = true;
                    break;
                }
                m_stream.next_in = reinterpret_cast<Bytef*>(m_in.data());
                m_stream.avail_in = static_cast<uInt>(got);
            }
            m_member_started = true;
            const int rc = inflate(&m_stream, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                // gzip allows several members back to back (cat a.gz b.gz): go on with the next.
                m_member_started = false;
                m_consumed_before += m_stream.total_in;
                Bytef* next_in = m_stream.next_in;
                const uInt avail_in = m_stream.avail_in;
                inflateReset(&m_stream);
                m_stream.next_in = next_in;
                m_stream.avail_in = avail_in;
                continue;
            }
            if (rc != Z_OK && rc != Z_BUF_ERROR) {
                throw input_error(fmt::format("{}: damaged gzip stream near compressed byte {}: {}", m_file->path().string(),
                                              m_stream.total_in + m_consumed_before,
                                              m_stream.msg != nullptr ? m_stream.msg : "inflate failed"));
            }
        }
        return static_cast<std::size_t>(reinterpret_cast<char*>(m_stream.next_out) - out);
    }
    bool compressed() const override { return true; }

private:
    std::unique_ptr<FileHandle> m_file;
    std::vector<char> m_in;
    z_stream m_stream;
    bool m_member_started = false;
    bool m_done = false;
    unsigned long m_consumed_before = 0;
};

} // namespace

std::unique_ptr<ByteSource> ByteSource::open(const fs::path& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        throw input_error(fmt::format("{}: is a directory, not a trace file", path.string()));
    }
    auto file = std::make_unique<FileHandle>(path);
    std::vector<char> head(2);
    head.resize(file->read(head.data(), head.size()));
    if (head.size() == 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) {
        return std::make_unique<GzipSource>(std::move(file), std::move(head));
    }
    return std::make_unique<PlainSource>(std::move(file), std::move(head));
}

} // namespace harness
