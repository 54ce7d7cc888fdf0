#pragma once
// What archive.cpp (packing) and archive_extract.cpp (unpacking) share. Not part of the API.
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"

#include <archive.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>

namespace harness::archive_detail {

namespace fs = std::filesystem;

inline constexpr std::size_t k_chunk = std::size_t{1} << 20;

/// Removes a path on destruction unless the work that produced it completed.
class RemoveUnlessKept {
public:
    explicit RemoveUnlessKept(fs::path path) : m_path(std::move(path)) {}
    ~RemoveUnlessKept() {
        if (!m_kept) {
            std::error_code ec;
            fs::remove_all(m_path, ec);
        }
    }
    RemoveUnlessKept(const RemoveUnlessKept&) = delete;
    RemoveUnlessKept& operator=(const RemoveUnlessKept&) = delete;
    void keep() { m_kept = true; }

private:
    fs::path m_path;
    bool m_kept = false;
};

inline std::string la_error(archive* a) {
    const char* message = archive_error_string(a);
    return message != nullptr ? message : "unknown libarchive error";
}

inline std::string errno_text() { return std::strerror(errno); }

inline void check_interrupt() { throw_if_interrupted(); }

} // namespace harness::archive_detail
