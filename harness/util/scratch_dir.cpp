#include "util/scratch_dir.hpp"

#include "util/error.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <stdlib.h>

namespace harness {

ScratchDir::ScratchDir(const fs::path& root, const std::string& purpose) {
    fs::path base = root;
    if (base.empty()) {
        const char* tmpdir = std::getenv("TMPDIR");
        base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
    }
    std::string pattern = (base / ("ccl-harness-" + purpose + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw HarnessError(fmt::format("{}: cannot create a scratch directory: {}", base.string(), std::strerror(errno)));
    }
    m_path = pattern;
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
}

} // namespace harness
