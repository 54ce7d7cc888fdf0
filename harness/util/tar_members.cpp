#include "util/tar_members.hpp"

#include "util/archive_detail.hpp"
#include "util/error.hpp"

#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>

namespace harness {

std::map<std::string, std::string> read_tar_members(const fs::path& tar, const std::set<std::string>& names, std::size_t max_bytes) {
    using archive_detail::la_error;
    const Fd fd(::open(tar.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        throw HarnessError(fmt::format("{}: cannot open: {}", tar.string(), std::strerror(errno)));
    }
    const std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
    if (!a) {
        throw HarnessError("archive: out of memory");
    }
    archive_read_support_format_tar(a.get());
    if (archive_read_open_fd(a.get(), fd.get(), archive_detail::k_chunk) != ARCHIVE_OK) {
        throw HarnessError(fmt::format("{}: not a tar archive: {}", tar.string(), la_error(a.get())));
    }
    std::map<std::string, std::string> found;
    archive_entry* entry = nullptr;
    int status = ARCHIVE_OK;
    while (found.size() < names.size() && (status = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
        std::string name = archive_entry_pathname(entry) != nullptr ? archive_entry_pathname(entry) : "";
        if (name.rfind("./", 0) == 0) {
            name.erase(0, 2);
        }
        if (names.count(name) == 0 || found.count(name) != 0) {
            continue;
        }
        const la_int64_t size = archive_entry_size(entry);
        if (size < 0 || static_cast<std::size_t>(size) > max_bytes) {
            throw HarnessError(fmt::format("{}: {} is larger than {} bytes", tar.string(), name, max_bytes));
        }
        std::string content(static_cast<std::size_t>(size), '\0');
        if (archive_read_data(a.get(), content.data(), content.size()) != static_cast<la_ssize_t>(content.size())) {
            throw HarnessError(fmt::format("{}: cannot read {}: {}", tar.string(), name, la_error(a.get())));
        }
        found.emplace(std::move(name), std::move(content));
    }
    if (status != ARCHIVE_OK && status != ARCHIVE_EOF) {
        throw HarnessError(fmt::format("{}: damaged tar archive: {}", tar.string(), la_error(a.get())));
    }
    return found;
}

} // namespace harness
