#include "bundle/input_path.hpp"

#include "bundle/bundle_manifest.hpp"
#include "run/run_directory.hpp"
#include "util/strings.hpp"

#include <fstream>
#include <string_view>
#include <vector>

namespace harness {

namespace {

bool is_file(const fs::path& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

bool is_bundle_dir(const fs::path& dir) { return is_file(dir / k_manifest_name); }

bool is_run_dir(const fs::path& dir) { return is_file(dir / run_files::k_card) && is_file(dir / run_files::k_record); }

/// The only entry of `dir` when it is a directory (not a link to one), else empty.
fs::path only_subdirectory(const fs::path& dir) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec || it == fs::directory_iterator()) {
        return {};
    }
    const fs::path first = it->path();
    const bool directory = it->is_directory(ec) && !it->is_symlink(ec);
    it.increment(ec);
    return !ec && directory && it == fs::directory_iterator() ? first : fs::path();
}

} // namespace

InputPath classify_input(const fs::path& path) {
    InputPath input;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) {
        return input;
    }
    if (fs::is_regular_file(status)) {
        input.kind = ends_with(path.filename().string(), ".tar.zst") ? InputKind::packed_bundle : InputKind::other_file;
        return input;
    }
    if (!fs::is_directory(status)) {
        input.kind = InputKind::special;
        return input;
    }
    fs::path dir = fs::absolute(path, ec).lexically_normal();
    if (dir.filename().empty()) {
        dir = dir.parent_path(); // "name/" names "name"
    }
    input.kind = InputKind::other_dir;
    if (is_bundle_dir(dir)) {
        input.kind = InputKind::bundle_dir;
    } else if (is_run_dir(dir)) {
        input.kind = InputKind::run_dir;
    } else if (const fs::path inner = only_subdirectory(dir); !inner.empty() && is_bundle_dir(inner)) {
        input.kind = InputKind::bundle_dir;
        dir = inner;
    }
    input.dir = dir;
    input.name = dir.filename().string();
    return input;
}

std::string foreign_archive_kind(const fs::path& file) {
    char head[512] = {};
    std::ifstream in(file, std::ios::binary);
    in.read(head, sizeof head);
    const auto got = static_cast<std::size_t>(in.gcount());
    const auto starts = [&](std::string_view magic) { return got >= magic.size() && std::string_view(head, magic.size()) == magic; };
    if (starts("\x28\xb5\x2f\xfd")) {
        return {};
    }
    if (starts("\x1f\x8b")) {
        return "a gzip-compressed file (a .tar.gz?)";
    }
    if (starts(std::string_view("\xfd"
                                "7zXZ\0",
                                6))) {
        return "an xz-compressed file (a .tar.xz?)";
    }
    if (starts("BZh")) {
        return "a bzip2-compressed file (a .tar.bz2?)";
    }
    if (starts("PK\x03\x04")) {
        return "a zip archive";
    }
    if (got >= 262 && std::string_view(head + 257, 5) == "ustar") {
        return "an uncompressed tar";
    }
    return "neither a .tar.zst nor a directory";
}

} // namespace harness
