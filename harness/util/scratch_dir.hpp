#pragma once
// A private temporary directory that disappears on every way out of the scope that made it.
#include "util/fs.hpp"

#include <string>

namespace harness {

class ScratchDir {
public:
    /// Creates `<root>/ccl-harness-<purpose>-XXXXXX` (mode 0700); an empty root means $TMPDIR,
    /// else /tmp. Throws HarnessError when it cannot.
    ScratchDir(const fs::path& root, const std::string& purpose);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

} // namespace harness
