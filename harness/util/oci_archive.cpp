#include "util/oci_archive.hpp"

#include "util/archive_detail.hpp"
#include "util/limits.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"

#include <algorithm>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <memory>
#include <sys/stat.h>

namespace harness {

using namespace archive_detail;

namespace {

/// The files the image-layout spec requires at the top of every layout.
constexpr const char* k_index = "index.json";
constexpr const char* k_layout = "oci-layout";
/// A tar's unit: headers, data padded to it, the end-of-archive.
constexpr la_int64_t k_block = 512;

/// `raw` without the one "./" GNU tar puts before names given as "." (read_tar_members ignores
/// that one too, so both read the same index.json) and without a directory's trailing "/"; ""
/// for the layout's own root (".", "./").
std::string member_name(std::string_view raw, bool directory) {
    if (raw.substr(0, 2) == "./") {
        raw.remove_prefix(2);
    }
    if (raw == ".") {
        raw = {};
    }
    if (directory && raw.size() > 1 && raw.back() == '/') {
        raw.remove_suffix(1);
    }
    return std::string(raw);
}

/// Why a symbolic link at `name` pointing at `target` leaves the archive, or "": its target is
/// resolved against the link's directory, each ".." taking one component off.
std::string symlink_problem(const std::string& name, std::string_view target) {
    if (target.empty()) {
        return "a symbolic link without a target";
    }
    if (target.size() > k_max_safe_name_bytes) {
        return fmt::format("a symbolic link whose target is longer than {} bytes", k_max_safe_name_bytes);
    }
    for (const char c : target) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            return "a symbolic link whose target has a control character";
        }
    }
    if (target.front() == '/') {
        return fmt::format("a symbolic link to the absolute path {}", json_string(target));
    }
    std::size_t depth = static_cast<std::size_t>(std::count(name.begin(), name.end(), '/'));
    std::size_t start = 0;
    while (start <= target.size()) {
        const std::size_t slash = std::min(target.find('/', start), target.size());
        const std::string_view part = target.substr(start, slash - start);
        if (part == "..") {
            if (depth == 0) {
                return fmt::format("a symbolic link to {}, outside the archive", json_string(target));
            }
            --depth;
        } else if (!part.empty() && part != ".") {
            ++depth;
        }
        start = slash + 1;
    }
    return {};
}

/// Why one member is unsafe to hand to a tool that unpacks it, or "".
std::string member_problem(archive_entry* entry, const std::string& name) {
    if (std::string why = relative_name_problem(name); !why.empty()) {
        return why;
    }
    if (const char* target = archive_entry_hardlink(entry); target != nullptr) {
        const std::string why = relative_name_problem(member_name(target, false));
        return why.empty() ? "" : fmt::format("a hard link to {}: {}", json_string(target), why);
    }
    switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
        if (archive_entry_size(entry) < 0) {
            return "a negative size";
        }
        // A sparse member's size is not what it occupies: refused, so sizes can be checked against
        // the file (podman writes none).
        return archive_entry_sparse_count(entry) > 0 ? "a sparse file" : "";
    case AE_IFDIR: return "";
    case AE_IFLNK: {
        const char* target = archive_entry_symlink(entry);
        return symlink_problem(name, target != nullptr ? target : "");
    }
    case AE_IFCHR:
    case AE_IFBLK: return "a device node";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    default: return "a member that is neither a file, a directory nor a link";
    }
}

/// The index and layout file: each once, and a plain file (a link would have podman read
/// something other than what verify read).
std::string required_member_problem(archive_entry* entry, const std::string& name, int& seen) {
    ++seen;
    if (seen > 1) {
        return fmt::format("{} twice (tools disagree on which one counts)", name);
    }
    if (archive_entry_hardlink(entry) != nullptr || archive_entry_filetype(entry) != AE_IFREG) {
        return fmt::format("{} is not a plain file", name);
    }
    return {};
}

} // namespace

std::string oci_archive_problem(const fs::path& archive) {
    const Fd fd(::open(archive.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0) {
        return fmt::format("cannot open: {}", errno_text());
    }
    const std::unique_ptr<struct archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
    if (!a) {
        throw HarnessError("archive: out of memory");
    }
    archive_read_support_format_tar(a.get());
    if (archive_read_open_fd(a.get(), fd.get(), k_chunk) != ARCHIVE_OK) {
        return fmt::format("not a tar archive: {}", la_error(a.get()));
    }
    const std::uint64_t max_members = input_limit(InputLimit::bundle_entries);
    std::uint64_t members = 0;
    int indexes = 0;
    int layouts = 0;
    std::string last;        // the member before a damaged header, to say where the damage is
    la_int64_t data_end = 0; // where the last member's data, padded to a block, ends
    archive_entry* entry = nullptr;
    for (;;) {
        check_interrupt();
        const int status = archive_read_next_header(a.get(), &entry);
        if (status == ARCHIVE_EOF) {
            break;
        }
        // A warning too: read_tar_members stops at one, and would not read what the walk passed.
        if (status != ARCHIVE_OK) {
            return members == 0 ? fmt::format("not a tar archive: {}", la_error(a.get()))
                                : fmt::format("damaged after member {}: {}", json_string(last), la_error(a.get()));
        }
        const char* raw = archive_entry_pathname(entry);
        if (raw == nullptr) {
            raw = archive_entry_pathname_utf8(entry);
        }
        const std::string name = member_name(raw != nullptr ? raw : "", archive_entry_filetype(entry) == AE_IFDIR);
        last = raw != nullptr ? raw : "";
        if (++members > max_members) {
            return fmt::format("more than {} members (raise the limit with {}=N)", max_members,
                               input_limit_variable(InputLimit::bundle_entries));
        }
        if (name.empty() && archive_entry_filetype(entry) == AE_IFDIR) {
            continue; // the layout's own directory, "./"
        }
        std::string why = member_problem(entry, name);
        if (why.empty() && (name == k_index || name == k_layout)) {
            why = required_member_problem(entry, name, name == k_index ? indexes : layouts);
        }
        if (!why.empty()) {
            return fmt::format("member {}: {}", json_string(last), why);
        }
        // The member's data must lie inside the file: skipping it is a seek, which never fails
        // past the end, so a truncated archive shows only here and in the end-of-archive below.
        const la_int64_t size = archive_entry_size(entry);
        const la_int64_t end = archive_filter_bytes(a.get(), -1) + size;
        if (size > 0 && (end < 0 || end > static_cast<la_int64_t>(info.st_size))) {
            return fmt::format("truncated: member {} ends past the end of the file", json_string(last));
        }
        data_end = end + (k_block - size % k_block) % k_block;
    }
    // Every tar writer (podman's, GNU tar, Python's) ends with zero blocks; the reader also stops
    // at the end of the file, so an archive cut between two members ends without them.
    if (members > 0 && archive_filter_bytes(a.get(), -1) <= data_end) {
        return fmt::format("truncated: no end-of-archive after member {}", json_string(last));
    }
    if (indexes == 0) {
        return fmt::format("not an OCI image archive: no {} (the image-layout spec's index)", k_index);
    }
    if (layouts == 0) {
        return fmt::format("not an OCI image archive: no {} (the image-layout spec's marker file)", k_layout);
    }
    return {};
}

} // namespace harness
