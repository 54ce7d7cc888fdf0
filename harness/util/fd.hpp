#pragma once
// A file descriptor owned by one scope.
#include <unistd.h>

namespace harness {

/// A file descriptor closed on every path out.
class Fd {
public:
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }
    /// Closes now, reporting the error a deferred close would have swallowed.
    int close() {
        const int fd = m_fd;
        m_fd = -1;
        return ::close(fd);
    }

private:
    int m_fd;
};

} // namespace harness
