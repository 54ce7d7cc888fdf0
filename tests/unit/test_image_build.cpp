// Base images and image builds against a scripted ProcessRunner: every command line must be the
// next one scripted, or the test fails. No podman, no mmdebstrap, no network.
//
// The answers are podman 4.3.1's (Debian 12): `podman image exists` exits 0 or 1
// (cmd/podman/images/exists.go: "exit status 1 if the image does not exist"), `image inspect
// --format {{.Id}}` prints the id without "sha256:", `import --quiet` prints the id.
#include "image/base_image.hpp"
#include "image/base_spec.hpp"
#include "image/image_build.hpp"
#include "scripted_runner.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <fstream>
#include <functional>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::TempDir;

namespace {

const std::string k_base_id(64, 'b');
const std::string k_image_id(64, 'c');
const char* const k_packages_out = "python3-torch=1.13.1+dfsg-4\nbash=5.2.15-2+b2\nWARN[0000] a warning podman wrote\n";
const char* const k_packages = "bash=5.2.15-2+b2\npython3-torch=1.13.1+dfsg-4\n";

struct Fixture {
    TempDir home;
    TempDir scratch;
    ScriptedRunner runner;
    ImageContext context{runner};
    std::vector<std::string> progress;
    BaseSpec spec;
    std::string tag;

    Fixture() {
        home.write("containers/base/tiny.yaml", "suite: bookworm\nmirror: http://deb.debian.org/debian\nvariant: minbase\n"
                                                "packages: [python3-torch, procps]\nsource_date_epoch: 7\n");
        context.home = home.path();
        context.scratch_root = scratch.path() / "tmp";
        context.lock_dir = scratch.path() / "lock";
        fs::create_directories(context.scratch_root);
        fs::create_directories(context.lock_dir);
        context.progress = [this](const std::string& line) { progress.push_back(line); };
        spec = load_base_spec(home.path(), "tiny");
        tag = base_tag(spec);
    }

    std::string mmdebstrap_line() const { return "mmdebstrap --variant=minbase --include=procps,python3-torch bookworm "; }

    /// What mmdebstrap does: writes the tar named by its second-to-last argument.
    static void write_tar(const Command& command) { std::ofstream(command.argv[command.argv.size() - 2]) << "tar"; }

    bool scratch_empty() const { return fs::is_empty(context.scratch_root); }

    /// The commands that build the base: absent twice (before and after the lock), mmdebstrap,
    /// import, inspect.
    void expect_base_build() {
        runner.expect("podman image exists " + tag, "", 1).expect("podman image exists " + tag, "", 1);
        runner.expect(mmdebstrap_line() + "* http://deb.debian.org/debian", "I: done\n", 0, write_tar);
        runner.expect("podman import --quiet --change CMD [\"/bin/bash\"] --change WORKDIR / --change ENV LANG=C.UTF-8 --change "
                      "LABEL org.ccl-harness.base.key=" +
                          base_key(spec) + " --message ccl-harness base tiny from tiny.yaml * " + tag,
                      "sha256:" + k_base_id + "\n");
        runner.expect("podman image inspect --format {{.Id}} " + tag, k_base_id + "\n");
    }

    /// A rendered directory whose Containerfile is FROM `from`.
    fs::path rendered(const std::string& from) const {
        return home.write("rendered/Containerfile", "# comment\nFROM " + from + "\nWORKDIR /workspace\n").parent_path();
    }
};

template <typename Call> void expect_failure(const Call& call, const std::string& contains, int code) {
    try {
        call();
    } catch (const HarnessError& error) {
        CHECK_THAT(error.what(), Catch::Contains(contains));
        CHECK(error.code() == code);
        return;
    }
    FAIL("no error; expected one containing " << contains);
}

} // namespace

TEST_CASE("an existing base image is reused without building", "[image][base_image]") {
    Fixture f;
    f.runner.expect("podman image exists " + f.tag)
        .expect("podman image inspect --format {{.Id}} " + f.tag, "sha256:" + k_base_id + "\n");
    const BaseImage base = ensure_base_image(f.spec, f.context);
    CHECK(f.runner.done());
    CHECK_FALSE(base.built);
    CHECK(base.id == k_base_id);
    CHECK(base.tag == f.tag);
    CHECK(f.progress.empty());
}

TEST_CASE("a missing base image is built with mmdebstrap and imported, and its tar removed", "[image][base_image]") {
    Fixture f;
    f.expect_base_build();
    const BaseImage base = ensure_base_image(f.spec, f.context);
    CHECK(f.runner.done());
    CHECK(base.built);
    CHECK(base.id == k_base_id);
    // mmdebstrap gets the spec's SOURCE_DATE_EPOCH, so its tar is reproducible.
    const Command& mmdebstrap = f.runner.seen()[2];
    CHECK(std::find(mmdebstrap.env.begin(), mmdebstrap.env.end(),
                    std::make_pair(std::string("SOURCE_DATE_EPOCH"), std::string("7"))) != mmdebstrap.env.end());
    CHECK_THAT(mmdebstrap.argv[4], Catch::StartsWith((f.context.scratch_root / "ccl-harness-base-").string()));
    CHECK(f.scratch_empty());
    REQUIRE(f.progress.size() == 2);
    CHECK_THAT(f.progress[0],
               Catch::Contains("base image " + f.tag + ": building with mmdebstrap") && Catch::Contains("about a minute"));
    CHECK(fs::exists(base_lock_path(f.tag, f.context)));
    CHECK(base_lock_path(f.tag, f.context).parent_path() == f.context.lock_dir);
}

TEST_CASE("a base another harness built while this one waited is reused", "[image][base_image]") {
    Fixture f;
    f.runner.expect("podman image exists " + f.tag, "", 1)
        .expect("podman image exists " + f.tag)
        .expect("podman image inspect --format {{.Id}} " + f.tag, k_base_id);
    const BaseImage base = ensure_base_image(f.spec, f.context);
    CHECK(f.runner.done());
    CHECK_FALSE(base.built);
}

TEST_CASE("a failed mmdebstrap leaves no tar and says why", "[image][base_image]") {
    Fixture f;
    f.runner.expect("podman image exists " + f.tag, "", 1).expect("podman image exists " + f.tag, "", 1);
    f.runner.expect(f.mmdebstrap_line() + "* http://deb.debian.org/debian", "E: Unable to locate package python3-torch\n", 1,
                    Fixture::write_tar);
    expect_failure([&] { ensure_base_image(f.spec, f.context); }, "Unable to locate package python3-torch", k_exit_failure);
    CHECK(f.runner.done());
    CHECK(f.scratch_empty());
}

TEST_CASE("a failed import leaves no tar", "[image][base_image]") {
    Fixture f;
    f.runner.expect("podman image exists " + f.tag, "", 1).expect("podman image exists " + f.tag, "", 1);
    f.runner.expect(f.mmdebstrap_line() + "* http://deb.debian.org/debian", "", 0, Fixture::write_tar);
    f.runner.expect("podman import *", "Error: no space left on device\n", 125);
    expect_failure([&] { ensure_base_image(f.spec, f.context); }, "import failed (exit 125)", k_exit_failure);
    CHECK(f.scratch_empty());
}

TEST_CASE("podman image exists failing for another reason is an error, not a build", "[image][base_image]") {
    Fixture f;
    f.runner.expect("podman image exists " + f.tag, "Error: cannot connect\n", 125);
    expect_failure([&] { ensure_base_image(f.spec, f.context); }, "cannot connect", k_exit_failure);
    CHECK(f.runner.done());
}

TEST_CASE("build_image builds on a ccl-base FROM and records id, base and packages", "[image][image_build]") {
    Fixture f;
    const fs::path dir = f.rendered(f.tag);
    f.expect_base_build();
    f.runner.expect("podman image exists localhost/ccl-test:1", "", 1)
        .expect("podman build --tag localhost/ccl-test:1 --file " + (dir / "Containerfile").string() + " " + dir.string(),
                "STEP 1/2\n")
        .expect("podman image inspect --format {{.Id}} localhost/ccl-test:1", k_image_id + "\n")
        .expect("podman run --rm --network none --entrypoint= localhost/ccl-test:1 dpkg-query -W -f ${Package}=${Version}\\n",
                k_packages_out);
    const ImageRecord record = build_image(dir, "localhost/ccl-test:1", f.context);
    CHECK(f.runner.done());
    CHECK(record.built);
    CHECK(record.base_built);
    CHECK(record.image_id == k_image_id);
    CHECK(record.base_tag == f.tag);
    CHECK(record.base_id == k_base_id);
    CHECK(record.containerfile_sha256 == sha256_file(dir / "Containerfile"));
    CHECK(record.packages == k_packages);
    CHECK(record.packages_sha256 == sha256_hex(k_packages));
}

TEST_CASE("build_image reuses an image that exists and leaves other FROMs to podman", "[image][image_build]") {
    Fixture f;
    const fs::path dir = f.rendered("--platform=linux/amd64 docker.io/library/debian:bookworm AS base");
    f.runner.expect("podman image exists localhost/ccl-test:2")
        .expect("podman image inspect --format {{.Id}} localhost/ccl-test:2", k_image_id)
        .expect("podman image inspect --format {{.Id}} docker.io/library/debian:bookworm", "Error: no such image\n", 125)
        .expect("podman run *", k_packages);
    const ImageRecord record = build_image(dir, "localhost/ccl-test:2", f.context);
    CHECK(f.runner.done());
    CHECK_FALSE(record.built);
    CHECK_FALSE(record.base_built);
    CHECK(record.base_tag == "docker.io/library/debian:bookworm");
    CHECK(record.base_id.empty());
    CHECK_THAT(f.progress.back(), Catch::Contains("reusing"));
}

TEST_CASE("podman-hpc migrates the image before anything runs from it", "[image][image_build]") {
    // Its compute nodes see only migrated images (podman_hpc.py:168-175, siteconfig.py:279-290).
    Fixture f;
    f.context.runtime = "podman-hpc";
    f.context.migrate = true;
    const fs::path dir = f.rendered("debian:bookworm");
    f.runner.expect("podman-hpc image exists t:1", "", 1)
        .expect("podman-hpc build *")
        .expect("podman-hpc image inspect --format {{.Id}} t:1", k_image_id)
        .expect("podman-hpc image inspect --format {{.Id}} debian:bookworm", k_base_id)
        .expect("podman-hpc migrate t:1")
        .expect("podman-hpc run *", k_packages);
    CHECK(build_image(dir, "t:1", f.context).built);
    CHECK(f.runner.done());

    Fixture failing;
    failing.context.runtime = "podman-hpc";
    failing.context.migrate = true;
    failing.runner.expect("podman-hpc image exists t:1")
        .expect("podman-hpc image inspect --format {{.Id}} t:1", k_image_id)
        .expect("podman-hpc image inspect --format {{.Id}} debian:bookworm", k_base_id)
        .expect("podman-hpc migrate t:1", "Error: no space left on device\n", 1);
    expect_failure([&] { return build_image(failing.rendered("debian:bookworm"), "t:1", failing.context); },
                   "podman-hpc migrate failed (exit 1):\nError: no space left on device", k_exit_failure);
}

TEST_CASE("a Containerfile rendered against an older base spec is refused before anything runs", "[image][image_build]") {
    Fixture f;
    const fs::path dir = f.rendered("localhost/ccl-base/tiny:0123456789abcdef");
    expect_failure([&] { return build_image(dir, "localhost/ccl-test:3", f.context); },
                   "Containerfile:2: FROM localhost/ccl-base/tiny:0123456789abcdef: containers/base/tiny.yaml changed since this "
                   "Containerfile was rendered",
                   k_exit_usage);
    CHECK(f.runner.seen().empty());
}

TEST_CASE("bad FROMs, tags and directories are input errors", "[image][image_build]") {
    Fixture f;
    expect_failure([&] { return build_image(f.rendered("localhost/ccl-base/nosuch:0123456789abcdef"), "t:1", f.context); }, "nosuch",
                   k_exit_usage);
    expect_failure([&] { return build_image(f.rendered("localhost/ccl-base/tiny"), "t:1", f.context); }, "not a base tag",
                   k_exit_usage);
    f.home.write("rendered/Containerfile", "# nothing\nRUN true\n");
    expect_failure([&] { return build_image(f.home.path() / "rendered", "t:1", f.context); }, "no FROM line", k_exit_usage);
    expect_failure([&] { return build_image(f.home.path() / "nowhere", "t:1", f.context); }, "no Containerfile", k_exit_usage);
    expect_failure([&] { return build_image(f.home.path() / "rendered", "--rm", f.context); }, "image tag", k_exit_usage);
    expect_failure([&] { return build_image(f.home.path() / "rendered", "a b", f.context); }, "image tag", k_exit_usage);
    CHECK(f.runner.seen().empty());
}

TEST_CASE("a failed podman build says why", "[image][image_build]") {
    Fixture f;
    const fs::path dir = f.rendered("debian:bookworm");
    f.runner.expect("podman image exists t:1", "", 1).expect("podman build *", "Error: RUN exited 1\n", 1);
    expect_failure([&] { return build_image(dir, "t:1", f.context); }, "image t:1: podman build failed (exit 1):\nError: RUN exited 1",
                   k_exit_failure);
}

TEST_CASE("an image without dpkg is an error, not an empty package list", "[image][image_build]") {
    Fixture f;
    const fs::path dir = f.rendered("alpine:3");
    f.runner.expect("podman image exists t:1")
        .expect("podman image inspect --format {{.Id}} t:1", k_image_id)
        .expect("podman image inspect --format {{.Id}} alpine:3", k_base_id)
        .expect("podman run *", "Error: crun: executable file `dpkg-query` not found\n", 127);
    expect_failure([&] { return build_image(dir, "t:1", f.context); }, "cannot list its Debian packages", k_exit_failure);
}

TEST_CASE("containerfile_base reads the first FROM past comments, options and continuations", "[image][image_build]") {
    CHECK(containerfile_base("# FROM nope\n\nfrom \\\n  --platform=x \\\n  img:1 AS a\nFROM b\n", "f") ==
          std::make_pair(std::string("img:1"), 3));
}

TEST_CASE("an image record round-trips through JSON and bad records are refused by field", "[image][image_build]") {
    ImageRecord record;
    record.tag = "localhost/ccl-torch-ddp:0123456789abcdef";
    record.image_id = k_image_id;
    record.containerfile_sha256 = std::string(64, 'd');
    record.base_tag = "localhost/ccl-base/bookworm-torch:0123456789abcdef";
    record.base_id = k_base_id;
    record.packages = k_packages;
    record.packages_sha256 = sha256_hex(k_packages);
    record.built = true;
    const Json json = image_record_to_json(record);
    const ImageRecord back = image_record_from_json(Json::parse(json.dump()), "provenance.json");
    CHECK(image_record_to_json(back).dump() == json.dump());

    const auto refused = [&](const std::function<void(Json&)>& edit, const std::string& contains) {
        Json bad = json;
        edit(bad);
        expect_failure([&] { return image_record_from_json(bad, "provenance.json"); }, "provenance.json: " + contains, k_exit_usage);
    };
    refused([](Json& j) { j["image_id"] = "sha256:" + k_image_id; }, "image.image_id: expected 64 lower-case hex");
    refused([](Json& j) { j["built"] = "yes"; }, "image.built: expected true or false");
    refused([](Json& j) { j["packages"] = "zlib=1\nbash=2\n"; }, "image.packages");
    refused([](Json& j) { j["packages_sha256"] = std::string(64, '0'); }, "image.packages_sha256");
    refused([](Json& j) { j["extra"] = 1; }, "image.extra: unknown field");
    refused([](Json& j) { j["tag"] = "-x"; }, "image.tag");
    Json missing = Json::object();
    for (const auto& [key, value] : json.as_object()) {
        if (key != "base_id") {
            missing[key] = value;
        }
    }
    expect_failure([&] { return image_record_from_json(missing, "p"); }, "p: image.base_id: missing", k_exit_usage);
    expect_failure([&] { return image_record_from_json(Json::array(), "p"); }, "expected an object", k_exit_usage);
}

TEST_CASE("diff_packages names added, removed and changed packages", "[image][image_build]") {
    CHECK(diff_packages(k_packages, k_packages).empty());
    const std::string diff = diff_packages("bash=5.2\nlibfoo=1\npython3-torch=1.13\n", "bash=5.2\npython3-torch=2.1\nzlib1g=1:1.2\n");
    CHECK(diff == "changed (1):\n  python3-torch 1.13 -> 2.1\nadded (1):\n  zlib1g 1:1.2\nremoved (1):\n  libfoo 1\n");
}
