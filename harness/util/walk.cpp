#include "util/walk.hpp"

#include <algorithm>

namespace harness {

Tree walk_tree(const fs::path& root, const WalkOptions& options) {
    Tree tree;
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(root, ec))) {
        return tree;
    }
    fs::recursive_directory_iterator it(root, ec);
    for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
        const fs::path& path = it->path();
        if (options.skip_hidden && path.filename().string().rfind('.', 0) == 0) {
            it.disable_recursion_pending();
            continue;
        }
        fs::file_status status = it->symlink_status(ec);
        if (ec) {
            break;
        }
        if (fs::is_symlink(status) && options.file_links == FileLinks::followed) {
            std::error_code target_ec; // a dangling link stays a link
            const fs::file_status target = fs::status(path, target_ec);
            if (!target_ec && fs::is_regular_file(target)) {
                status = target;
            }
        }
        TreeEntry entry;
        entry.path = path;
        entry.relative = path.lexically_relative(root).generic_string();
        entry.type = status.type();
        if (entry.type == fs::file_type::regular) {
            std::error_code size_ec;
            entry.size = fs::file_size(path, size_ec);
            entry.executable = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
        }
        tree.entries.push_back(std::move(entry));
    }
    tree.error = ec;
    std::sort(tree.entries.begin(), tree.entries.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.relative < b.relative; });
    return tree;
}

} // namespace harness
