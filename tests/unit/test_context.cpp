#include "test_context.hpp"

#include <fstream>
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

} // namespace harness::test
