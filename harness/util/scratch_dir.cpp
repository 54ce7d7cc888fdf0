#include "util/scratch_dir.hpp"

#include "util/error.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <stdlib.h>

namespace harness {

ScratchSpaceError::ScratchSpaceError(const fs::path& where, int error_number)
    : HarnessError(fmt::format("no space left on TMPDIR ({}: {}); free some or point TMPDIR elsewhere", where.string(),
                               std::strerror(error_number)),
                   k_exit_failure) {}

bool is_out_of_space(int error_number) { return error_number == ENOSPC || error_number == EDQUOT || error_number == EROFS; }

void throw_if_out_of_space(int error_number, const fs::path& where) {
    if (is_out_of_space(error_number)) {
        throw ScratchSpaceError(where, error_number);
    }
}

ScratchDir::ScratchDir(const fs::path& root, const std::string& purpose) {
    fs::path base = root;
    if (base.empty()) {
        const char* tmpdir = std::getenv("TMPDIR");
        base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
    }
    std::string pattern = (base / ("ccl-harness-" + purpose + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        const int error_number = errno;
        throw_if_out_of_space(error_number, base);
        errno = error_number;
        throw HarnessError(fmt::format("{}: cannot create a scratch directory: {}", base.string(), std::strerror(errno)));
    }
    m_path = pattern;
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
}

std::string with_scratch_paths_shown(std::string text, const fs::path& dir, std::string_view shown) {
    std::string base = dir.lexically_normal().string();
    while (base.size() > 1 && base.back() == '/') {
        base.pop_back();
    }
    if (base.empty() || base == "/") {
        return text;
    }
    const std::string prefix = base + "/";
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + shown.size())) {
        text.replace(at, prefix.size(), shown);
    }
    return text;
}

} // namespace harness
