// containers/base/<name>.yaml: what it may say, the key that names the image, and the tag.
#include "image/base_spec.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

namespace {

const char* const k_spec = R"(# a comment
suite: bookworm
mirror: http://deb.debian.org/debian
variant: minbase
packages:
  - python3-torch
  - procps
)";

std::string error_of(const fs::path& home, const std::string& name) {
    try {
        load_base_spec(home, name);
    } catch (const HarnessError& error) {
        CHECK(error.code() == k_exit_usage);
        return error.what();
    }
    FAIL("no error for " << name);
    return "";
}

} // namespace

TEST_CASE("a base spec is read with its fields", "[image][base_spec]") {
    const TempDir home;
    home.write("containers/base/tiny.yaml", k_spec);
    const BaseSpec spec = load_base_spec(home.path(), "tiny");
    CHECK(spec.name == "tiny");
    CHECK(spec.suite == "bookworm");
    CHECK(spec.mirror == "http://deb.debian.org/debian");
    CHECK(spec.variant == "minbase");
    CHECK(spec.packages == std::vector<std::string>{"python3-torch", "procps"});
    CHECK(spec.source_date_epoch == 0);
    CHECK(base_key(spec).size() == 64);
    CHECK(base_tag(spec) == "localhost/ccl-base/tiny:" + base_key(spec).substr(0, 16));
}

TEST_CASE("the shipped bookworm-torch spec loads", "[image][base_spec]") {
    const BaseSpec spec = load_base_spec(CCL_HARNESS_SOURCE_DIR, "bookworm-torch");
    CHECK(std::find(spec.packages.begin(), spec.packages.end(), "python3-torch") != spec.packages.end());
    CHECK(base_name_of_tag(base_tag(spec)) == "bookworm-torch");
}

TEST_CASE("comments, key order and package order do not change the key; fields do", "[image][base_spec]") {
    const TempDir home;
    home.write("containers/base/a.yaml", k_spec);
    home.write("containers/base/b.yaml", "packages: [procps, python3-torch, procps]  # reordered\n"
                                         "variant: minbase\nmirror: http://deb.debian.org/debian\nsuite: bookworm\n");
    home.write("containers/base/c.yaml", std::string(k_spec) + "  - git\n");
    home.write("containers/base/d.yaml", std::string(k_spec) + "source_date_epoch: 1700000000\n");
    const std::string a = base_key(load_base_spec(home.path(), "a"));
    CHECK(base_key(load_base_spec(home.path(), "b")) == a);
    CHECK(base_key(load_base_spec(home.path(), "c")) != a);
    CHECK(base_key(load_base_spec(home.path(), "d")) != a);
    // The name is not part of the key, only of the tag.
    CHECK(base_tag(load_base_spec(home.path(), "b")) == "localhost/ccl-base/b:" + a.substr(0, 16));
}

TEST_CASE("a bad base spec is refused with file:line and the field", "[image][base_spec]") {
    const TempDir home;
    home.write("containers/base/unknown.yaml", std::string(k_spec) + "packagez: [git]\n");
    CHECK_THAT(error_of(home.path(), "unknown"), Catch::Contains("unknown.yaml:8:1") &&
                                                     Catch::Contains("\"packagez\": unknown field") &&
                                                     Catch::Contains("did you mean packages?"));
    home.write("containers/base/nosuite.yaml", "mirror: http://deb.debian.org/debian\npackages: [git]\n");
    CHECK_THAT(error_of(home.path(), "nosuite"), Catch::Contains("suite: missing"));
    home.write("containers/base/badpkg.yaml",
               "suite: bookworm\nmirror: http://deb.debian.org/debian\npackages:\n  - git\n  - '--evil'\n");
    CHECK_THAT(error_of(home.path(), "badpkg"), Catch::Contains("badpkg.yaml:5:5") && Catch::Contains("packages[1]"));
    home.write("containers/base/comma.yaml", "suite: bookworm\nmirror: http://deb.debian.org/debian\npackages: ['git,curl']\n");
    CHECK_THAT(error_of(home.path(), "comma"), Catch::Contains("packages[0]"));
    home.write("containers/base/nopkg.yaml", "suite: bookworm\nmirror: http://deb.debian.org/debian\npackages: []\n");
    CHECK_THAT(error_of(home.path(), "nopkg"), Catch::Contains("packages: empty"));
    home.write("containers/base/mirror.yaml", "suite: bookworm\nmirror: 'ftp://x y'\npackages: [git]\n");
    CHECK_THAT(error_of(home.path(), "mirror"), Catch::Contains("mirror.yaml:2:9: mirror:"));
    home.write("containers/base/epoch.yaml", "suite: bookworm\nmirror: http://x/\npackages: [git]\nsource_date_epoch: -1\n");
    CHECK_THAT(error_of(home.path(), "epoch"), Catch::Contains("source_date_epoch"));
    home.write("containers/base/list.yaml", "- a\n");
    CHECK_THAT(error_of(home.path(), "list"), Catch::Contains("expected a mapping"));
    CHECK_THAT(error_of(home.path(), "absent"), Catch::Contains("no ") && Catch::Contains("absent.yaml"));
}

TEST_CASE("a base name is a file name and part of a tag: anything else is refused", "[image][base_spec]") {
    const TempDir home;
    for (const std::string& name :
         std::vector<std::string>{"", "../etc", "a/b", "Upper", "-x", ".hidden", "a b", std::string(65, 'a')}) {
        CHECK_THAT(error_of(home.path(), name), Catch::Contains("base image name"));
    }
    CHECK(base_name_problem("bookworm-torch").empty());
    CHECK(base_name_problem("b.1_x").empty());
}

TEST_CASE("base_name_of_tag knows base tags only", "[image][base_spec]") {
    CHECK(base_name_of_tag("localhost/ccl-base/bookworm-torch:0123456789abcdef") == "bookworm-torch");
    CHECK(base_key16_of_tag("localhost/ccl-base/bookworm-torch:0123456789abcdef") == "0123456789abcdef");
    CHECK_FALSE(base_name_of_tag("localhost/ccl-base/bookworm-torch:0123456789ABCDEF"));
    CHECK_FALSE(base_name_of_tag("localhost/ccl-base/bookworm-torch:0123456789abcde"));
    CHECK_FALSE(base_name_of_tag("localhost/ccl-base/bookworm-torch"));
    CHECK_FALSE(base_name_of_tag("localhost/ccl-base/../x:0123456789abcdef"));
    CHECK_FALSE(base_name_of_tag("ccl-base:bookworm-torch"));
    CHECK_FALSE(base_name_of_tag("nvcr.io/nvidia/pytorch@sha256:0123"));
    CHECK_FALSE(base_key16_of_tag("debian:bookworm"));
}
