#include "render/render_key.hpp"

#include "util/sha256.hpp"

#include <array>
#include <fstream>
#include <map>

namespace harness {

namespace {

void add_head(Sha256& hash, const std::string& name, std::uintmax_t size) {
    const std::string head = name + '\0' + std::to_string(size) + '\0';
    hash.update(head.data(), head.size());
}

} // namespace

std::string render_key(const RenderedRun& run) {
    std::map<std::string, const std::string*> files;
    for (const RenderedFile& file : run.files) {
        if (file.name.find('/') == std::string::npos) {
            files[file.name] = &file.content;
        }
    }
    Sha256 hash;
    for (const auto& [name, content] : files) {
        add_head(hash, name, content->size());
        hash.update(content->data(), content->size());
    }
    return hash.finish();
}

std::string render_key_of_directory(const fs::path& rendered_dir) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(rendered_dir, ec))) {
        return {};
    }
    std::map<std::string, fs::path> files;
    for (const auto& entry : fs::directory_iterator(rendered_dir, ec)) {
        if (!entry.is_symlink(ec) && entry.is_regular_file(ec)) {
            files[entry.path().filename().string()] = entry.path();
        }
    }
    // Streamed, so a run directory from shared scratch with a huge file costs time, not memory.
    Sha256 hash;
    std::array<char, 1 << 16> buffer{};
    for (const auto& [name, path] : files) {
        std::ifstream in(path, std::ios::binary);
        const std::uintmax_t size = fs::file_size(path, ec);
        if (!in || ec) {
            return {};
        }
        add_head(hash, name, size);
        std::uintmax_t read = 0;
        while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
            hash.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
            read += static_cast<std::uintmax_t>(in.gcount());
        }
        if (read != size) {
            return {}; // changed while read: no key rather than a wrong one
        }
    }
    return hash.finish();
}

} // namespace harness
