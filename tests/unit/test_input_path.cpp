#include "bundle/input_path.hpp"
#include "test_context.hpp"
#include "util/fs.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>

using namespace harness;

namespace {

void touch(const fs::path& file, const std::string& text = "{}") {
    fs::create_directories(file.parent_path());
    write_file_atomic(file, text);
}

} // namespace

TEST_CASE("classify_input tells the four commands' inputs apart", "[input_path]") {
    const test::TempDir dir;
    const fs::path root = dir.path();

    CHECK(classify_input(root / "absent").kind == InputKind::missing);

    touch(root / "b-1.tar.zst", "\x28\xb5\x2f\xfd");
    CHECK(classify_input(root / "b-1.tar.zst").kind == InputKind::packed_bundle);
    touch(root / "notes.txt", "x");
    CHECK(classify_input(root / "notes.txt").kind == InputKind::other_file);

    // A bundle as pack writes it; given with a trailing "/" it is still named by its directory.
    touch(root / "bundles" / "b-2" / "manifest.json");
    InputPath bundle = classify_input(root / "bundles" / "b-2" / "");
    CHECK(bundle.kind == InputKind::bundle_dir);
    CHECK(bundle.name == "b-2");
    CHECK(bundle.dir == fs::absolute(root / "bundles" / "b-2"));

    // The directory an archive was unpacked into, holding only the bundle.
    bundle = classify_input(root / "bundles");
    CHECK(bundle.kind == InputKind::bundle_dir);
    CHECK(bundle.name == "b-2");

    // ...but not through a link, nor beside anything else.
    fs::create_directories(root / "linked");
    fs::create_directory_symlink(root / "bundles" / "b-2", root / "linked" / "b-2");
    CHECK(classify_input(root / "linked").kind == InputKind::other_dir);
    touch(root / "bundles" / "stray.txt", "x");
    CHECK(classify_input(root / "bundles").kind == InputKind::other_dir);

    touch(root / "run" / "card.yaml", "name: x\n");
    CHECK(classify_input(root / "run").kind == InputKind::other_dir); // a card alone is not a run
    touch(root / "run" / "run.json");
    const InputPath run = classify_input(root / "run");
    CHECK(run.kind == InputKind::run_dir);
    CHECK(run.name == "run");

    REQUIRE(::mkfifo((root / "fifo").c_str(), 0600) == 0);
    CHECK(classify_input(root / "fifo").kind == InputKind::special);
}

TEST_CASE("foreign_archive_kind names the common wrong files", "[input_path]") {
    const test::TempDir dir;
    const auto kind_of = [&](const std::string& bytes) {
        const fs::path file = dir.path() / "f";
        write_file_atomic(file, bytes);
        return foreign_archive_kind(file);
    };
    CHECK(kind_of(std::string("\x28\xb5\x2f\xfd", 4) + "rest").empty());
    CHECK(kind_of(test::gzip("x")) == "a gzip-compressed file (a .tar.gz?)");
    CHECK(kind_of("PK\x03\x04....") == "a zip archive");
    CHECK(kind_of("BZh91AY") == "a bzip2-compressed file (a .tar.bz2?)");
    CHECK(kind_of("plain text") == "neither a .tar.zst nor a directory");
    CHECK(kind_of("") == "neither a .tar.zst nor a directory");
}
