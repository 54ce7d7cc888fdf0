#pragma once
// A scratch directory under the build tree, removed afterwards. It refuses to exist anywhere
// else, so a test can never write over a user's files.
#include <filesystem>
#include <string>

namespace harness::test {

class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    std::filesystem::path write(const std::string& name, const std::string& content) const;

private:
    std::filesystem::path m_path;
};

/// `text` as one gzip member (zlib, level 6): what torch's handler writes for *.json.gz.
std::string gzip(const std::string& text);

} // namespace harness::test
