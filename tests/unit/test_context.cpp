#include "test_context.hpp"

#include <fstream>
#include <zlib.h>
#include <stdexcept>
#include <unistd.h>

namespace harness::test {

TempDir::TempDir() {
    const std::filesystem::path root = std::filesystem::path(CCL_TEST_BUILD_DIR) / "test-tmp";
    std::filesystem::create_directories(root);
    std::string pattern = (root / "unit-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("cannot create a temporary directory under " + root.string());
    }
    m_path = pattern;
    const std::string build = std::filesystem::canonical(CCL_TEST_BUILD_DIR).string();
    if (std::filesystem::canonical(m_path).string().rfind(build, 0) != 0) {
        throw std::runtime_error("refusing to use a temporary directory outside the build tree");
    }
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

std::filesystem::path TempDir::write(const std::string& name, const std::string& content) const {
    const std::filesystem::path file = m_path / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    return file;
}

std::string gzip(const std::string& text) {
    z_stream stream{};
    if (deflateInit2(&stream, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        throw std::runtime_error("deflateInit2 failed");
    }
    std::string out(deflateBound(&stream, static_cast<uLong>(text.size())), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    stream.avail_in = static_cast<uInt>(text.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    const int status = deflate(&stream, Z_FINISH);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    if (status != Z_STREAM_END) {
        throw std::runtime_error("deflate did not finish");
    }
    return out;
}

} // namespace harness::test
