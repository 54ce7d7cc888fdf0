#include "util/fs.hpp"

#include "util/error.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace harness {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw HarnessError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)), k_exit_usage);
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

int write_fully(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return 0;
}

AtomicFile::AtomicFile(const fs::path& path) : m_path(path) {
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    m_temp = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
    m_fd = ::mkstemp(m_temp.data());
    if (m_fd < 0) {
        throw HarnessError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
    }
}

AtomicFile::~AtomicFile() {
    if (m_fd >= 0) {
        ::close(m_fd);
        ::unlink(m_temp.c_str());
    }
}

void AtomicFile::fail(int error) {
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    ::unlink(m_temp.c_str());
    throw HarnessError(fmt::format("{}: cannot write: {}", m_path.string(), std::strerror(error)));
}

void AtomicFile::write(const char* data, std::size_t size) {
    if (m_fd < 0) {
        throw HarnessError(fmt::format("{}: written after it was committed or failed", m_path.string()));
    }
    if (const int saved = write_fully(m_fd, data, size); saved != 0) {
        fail(saved);
    }
}

void AtomicFile::commit(bool executable) {
    if (m_fd < 0) {
        throw HarnessError(fmt::format("{}: committed twice or after it failed", m_path.string()));
    }
    const mode_t mode = executable ? 0755 : 0644;
    if (::fchmod(m_fd, mode) != 0 || ::fsync(m_fd) != 0) {
        fail(errno);
    }
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) {
        const int saved = errno;
        ::unlink(m_temp.c_str());
        throw HarnessError(fmt::format("{}: cannot write: {}", m_path.string(), std::strerror(saved)));
    }
    if (::rename(m_temp.c_str(), m_path.c_str()) != 0) {
        const int saved = errno;
        ::unlink(m_temp.c_str());
        throw HarnessError(fmt::format("{}: cannot write: {}", m_path.string(), std::strerror(saved)));
    }
}

void write_file_atomic(const fs::path& path, const std::string& content, bool executable) {
    AtomicFile file(path);
    file.write(content);
    file.commit(executable);
}

fs::path absolute_path(const fs::path& path) {
    if (path.empty()) {
        return path;
    }
    return fs::absolute(path).lexically_normal();
}

fs::path xdg_base_dir(const char* variable, const char* under_home) {
    const char* xdg = std::getenv(variable);
    if (xdg != nullptr && fs::path(xdg).is_absolute()) {
        return xdg;
    }
    const char* home = std::getenv("HOME");
    if (home != nullptr && *home != '\0') {
        return fs::path(home) / under_home;
    }
    return {};
}

bool is_inside(const fs::path& path, const fs::path& dir) {
    const fs::path p = fs::weakly_canonical(path);
    const fs::path d = fs::weakly_canonical(dir);
    auto pi = p.begin();
    for (auto di = d.begin(); di != d.end(); ++di, ++pi) {
        if (di->empty()) {
            continue; // a trailing separator
        }
        if (pi == p.end() || *pi != *di) {
            return false;
        }
    }
    return true;
}

} // namespace harness
