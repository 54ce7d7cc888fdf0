#include "util/own_file.hpp"

#include "util/error.hpp"
#include "util/fd.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace harness {

std::string read_own_file(const fs::path& file, std::uintmax_t max_bytes) {
    const std::string name = file.filename().string();
    const Fd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) {
        throw input_error(fmt::format(
            "{}: {}", name, errno == ELOOP ? "a symbolic link; a run directory's record must be its own" : std::strerror(errno)));
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
        throw input_error(fmt::format("{}: not a regular file", name));
    }
    if (static_cast<std::uintmax_t>(info.st_size) > max_bytes) {
        throw input_error(fmt::format("{}: {} bytes, more than a record holds ({} MiB)", name, info.st_size, max_bytes >> 20));
    }
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw input_error(fmt::format("{}: {}", name, std::strerror(errno)));
        }
        if (n == 0) {
            return text;
        }
        // The file may grow after fstat: the bound holds on what is read.
        if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
            throw input_error(fmt::format("{}: more than a record holds ({} MiB)", name, max_bytes >> 20));
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
}

} // namespace harness
