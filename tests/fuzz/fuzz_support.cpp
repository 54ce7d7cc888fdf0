#include "fuzz_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>
#include <zlib.h>
#include <zstd.h>

namespace harness::fuzz {

namespace {

fs::path make_scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = (tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp")) + "/ccl-fuzz-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) {
        std::perror("mkdtemp");
        std::abort();
    }
    return fs::path(buffer.data());
}

void remove_scratch() {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
}

} // namespace

const fs::path& scratch_dir() {
    static const fs::path dir = [] {
        fs::path made = make_scratch();
        std::atexit(remove_scratch);
        return made;
    }();
    return dir;
}

void wipe_scratch() {
    for (const auto& entry : fs::directory_iterator(scratch_dir())) {
        fs::remove_all(entry.path());
    }
}

fs::path write_scratch(const std::string& name, std::string_view bytes) {
    const fs::path path = scratch_dir() / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
        finding("fuzz_support", "cannot write " + path.string());
    }
    return path;
}

std::string gzip(std::string_view bytes) {
    z_stream stream{};
    // windowBits 15 + 16: a gzip header and trailer, as torch's profiler writes .json.gz.
    if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        finding("fuzz_support", "deflateInit2 failed");
    }
    std::string out(deflateBound(&stream, static_cast<uLong>(bytes.size())) + 32, '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    stream.avail_in = static_cast<uInt>(bytes.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    const int status = deflate(&stream, Z_FINISH);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    if (status != Z_STREAM_END) {
        finding("fuzz_support", "deflate did not finish");
    }
    return out;
}

std::string zstd_frame(std::string_view bytes) {
    std::string out(ZSTD_compressBound(bytes.size()), '\0');
    const std::size_t written = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 1);
    if (ZSTD_isError(written) != 0U) {
        finding("fuzz_support", std::string("ZSTD_compress: ") + ZSTD_getErrorName(written));
    }
    out.resize(written);
    return out;
}

bool has_gzip_magic(std::string_view bytes) {
    return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

bool has_zstd_magic(std::string_view bytes) {
    return bytes.size() >= 4 && bytes.substr(0, 4) == std::string_view("\x28\xb5\x2f\xfd", 4);
}

void finding(const char* target, const std::string& what) {
    std::fprintf(stderr, "%s: finding: %s\n", target, what.c_str());
    std::fflush(stderr);
    std::abort();
}

std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return size == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(data), size);
}

} // namespace harness::fuzz
