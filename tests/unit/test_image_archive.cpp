// An OCI image archive's image id, read from its index, manifest and config digest
// (image/image_archive.hpp), and the tar member reader under it (util/tar_members.hpp). The
// archives are made with tar(1) in the shape `podman save --format oci-archive` writes
// (podman 4.3.1: index.json, oci-layout, blobs/sha256/<hex>).
#include "image/image_archive.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/tar_members.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace harness;
using harness::test::TempDir;

namespace {

const std::string k_manifest(64, 'a');
const std::string k_config(64, 'c');

/// tar -cf DIR/image.oci.tar of DIR/oci/.
fs::path make_tar(const TempDir& dir) {
    fs::path tar = dir.path() / "image.oci.tar";
    const std::string command = "tar -C '" + (dir.path() / "oci").string() + "' -cf '" + tar.string() + "' .";
    REQUIRE(std::system(command.c_str()) == 0);
    return tar;
}

void write_index(const TempDir& dir, const std::string& manifests) {
    dir.write("oci/oci-layout", R"({"imageLayoutVersion": "1.0.0"})");
    dir.write("oci/index.json", R"({"schemaVersion":2,"manifests":[)" + manifests + "]}");
}

} // namespace

TEST_CASE("an OCI archive's image id is its manifest's config digest", "[image_archive]") {
    TempDir dir;
    SECTION("the shape podman writes") {
        write_index(dir, R"({"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:)" + k_manifest +
                             R"(","size":627})");
        dir.write("oci/blobs/sha256/" + k_manifest, R"({"schemaVersion":2,"config":{"digest":"sha256:)" + k_config + R"("}})");
        dir.write("oci/blobs/sha256/" + std::string(64, 'b'), std::string(4096, 'x')); // a layer, not read
        CHECK(oci_archive_image_id(make_tar(dir)) == k_config);
    }
    SECTION("two images, no manifest, a bad digest, a missing blob: input errors naming the archive") {
        write_index(dir, R"({"digest":"sha256:)" + k_manifest + R"("},{"digest":"sha256:)" + k_manifest + R"("})");
        CHECK_THROWS_WITH(oci_archive_image_id(make_tar(dir)), Catch::Contains("exactly one image manifest"));
        write_index(dir, R"({"digest":"md5:abc"})");
        CHECK_THROWS_WITH(oci_archive_image_id(make_tar(dir)), Catch::Contains("not sha256:<64 hex>"));
        write_index(dir, R"({"digest":"sha256:)" + std::string(64, 'e') + R"("})");
        CHECK_THROWS_WITH(oci_archive_image_id(make_tar(dir)), Catch::Contains("no blobs/sha256/eeee"));
    }
    SECTION("not a tar at all") {
        CHECK_THROWS_AS(oci_archive_image_id(dir.write("junk.tar", "this is not a tar archive")), HarnessError);
    }
}

TEST_CASE("read_tar_members reads the named members only, within a bound", "[image_archive]") {
    TempDir dir;
    dir.write("oci/a.json", "{}");
    dir.write("oci/big", std::string(2048, 'b'));
    const fs::path tar = make_tar(dir);
    const auto found = read_tar_members(tar, {"a.json", "absent"});
    CHECK(found.size() == 1);
    CHECK(found.at("a.json") == "{}");
    CHECK_THROWS_WITH(read_tar_members(tar, {"big"}, 1024), Catch::Contains("larger than 1024 bytes"));
}
