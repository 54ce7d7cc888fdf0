#include "test_context.hpp"
#include "util/fs.hpp"
#include "util/walk.hpp"

#include <catch2/catch.hpp>

using namespace harness;

namespace {

std::vector<std::string> listed(const Tree& tree) {
    std::vector<std::string> out;
    for (const TreeEntry& entry : tree.entries) {
        out.push_back(entry.relative + (entry.type == fs::file_type::directory ? "/"
                                        : entry.type == fs::file_type::symlink ? "@"
                                                                               : ""));
    }
    return out;
}

} // namespace

TEST_CASE("walk_tree lists a tree in byte order and never enters a link", "[walk]") {
    const test::TempDir dir;
    const fs::path root = dir.path() / "root";
    fs::create_directories(root / "b" / "deep");
    fs::create_directories(root / ".hidden");
    fs::create_directories(dir.path() / "outside");
    write_file_atomic(root / "b" / "deep" / "x.json", "{}");
    write_file_atomic(root / "B.txt", "12345", true);
    write_file_atomic(root / ".hidden" / "h", "h");
    write_file_atomic(dir.path() / "outside" / "secret", "s");
    fs::create_symlink(root / "B.txt", root / "link-to-file");
    fs::create_directory_symlink(dir.path() / "outside", root / "link-to-dir");
    fs::create_symlink(root / "absent", root / "dangling");

    SECTION("links as links") {
        const Tree tree = walk_tree(root);
        CHECK_FALSE(tree.error);
        CHECK(listed(tree) == std::vector<std::string>{".hidden/", ".hidden/h", "B.txt", "b/", "b/deep/", "b/deep/x.json", "dangling@",
                                                       "link-to-dir@", "link-to-file@"});
        const TreeEntry& file = tree.entries[2];
        CHECK(file.size == 5);
        CHECK(file.executable);
        CHECK(file.path == root / "B.txt");
    }
    SECTION("a link to a file counted as the file, a link to a directory still not entered") {
        const Tree tree = walk_tree(root, {FileLinks::followed, false});
        CHECK(listed(tree) == std::vector<std::string>{".hidden/", ".hidden/h", "B.txt", "b/", "b/deep/", "b/deep/x.json", "dangling@",
                                                       "link-to-dir@", "link-to-file"});
    }
    SECTION("hidden names left out, as Python's glob does") {
        CHECK(listed(walk_tree(root, {FileLinks::as_links, true})) ==
              std::vector<std::string>{"B.txt", "b/", "b/deep/", "b/deep/x.json", "dangling@", "link-to-dir@", "link-to-file@"});
    }
    SECTION("a root that is not a directory: nothing, and no error") {
        CHECK(walk_tree(root / "B.txt").entries.empty());
        CHECK(walk_tree(root / "link-to-dir").entries.empty());
        CHECK_FALSE(walk_tree(dir.path() / "absent").error);
    }
}
