// The job's preflight run before submission in the built image (workflows/image_preflight): the
// command it gives the runtime, and how each of ccl_preflight.py's answers is read.
#include "scripted_runner.hpp"
#include "test_context.hpp"
#include "workflows/image_preflight.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::TempDir;

namespace {

Plan sglang_plan() {
    Plan plan;
    plan.container_runtime = "podman-hpc";
    plan.container_build = "localhost/ccl-sglang:0123456789abcdef";
    return plan;
}

} // namespace

TEST_CASE("the preflight runs in the built image against the launch script's own call", "[image_preflight]") {
    TempDir dir;
    dir.write("launch.sbatch", "#!/bin/bash\npython3 \"$RUN_DIR/ccl_preflight.py\" --framework sglang -- --tp-size 4\n");
    dir.write("ccl_preflight.py", "# the shipped checker\n");
    const std::string d = absolute_path(dir.path()).string();
    const std::string command = "podman-hpc run --rm --entrypoint= --volume " + d + ":" + d +
                                " localhost/ccl-sglang:0123456789abcdef python3 " + d + "/ccl_preflight.py --from-script " + d +
                                "/launch.sbatch";
    SECTION("every option found") {
        ScriptedRunner runner;
        runner.expect(command, "preflight: sglang 0.5.17: 14 options and keys found\n", 0);
        const ImagePreflight result = preflight_in_image(sglang_plan(), dir.path(), runner);
        CHECK(result.result == ImagePreflight::Result::passed);
        CHECK(result.text == "preflight: sglang 0.5.17: 14 options and keys found");
    }
    SECTION("an option the image's framework lacks: refused, in its words") {
        ScriptedRunner runner;
        runner.expect(command, "preflight: error: sglang (sglang 0.5.17) refuses ...\n  --profile-prefix is not an option\n", 3);
        const ImagePreflight result = preflight_in_image(sglang_plan(), dir.path(), runner);
        CHECK(result.result == ImagePreflight::Result::refused);
        CHECK_THAT(result.text, Catch::Contains("--profile-prefix is not an option"));
    }
    SECTION("nothing checkable outside the job") {
        ScriptedRunner runner;
        runner.expect(command, "preflight: the help command (python3 $script) needs the job's own environment\n", 5);
        CHECK(preflight_in_image(sglang_plan(), dir.path(), runner).result == ImagePreflight::Result::not_checked);
    }
    SECTION("the runtime cannot run it here: not a verdict, the job checks again") {
        ScriptedRunner runner;
        runner.expect(command, "Error: no such image\nmore\n", 125);
        const ImagePreflight result = preflight_in_image(sglang_plan(), dir.path(), runner);
        CHECK(result.result == ImagePreflight::Result::not_checked);
        CHECK_THAT(result.text, Catch::StartsWith("could not ask the image here (exit 125): Error: no such image; more"));
        CHECK_THAT(result.text, Catch::EndsWith("the job checks again"));
    }
}

TEST_CASE("a render without a preflight is not checked, and nothing runs", "[image_preflight]") {
    TempDir dir;
    dir.write("launch.sbatch", "#!/bin/bash\nsrun true\n");
    ScriptedRunner runner; // any command fails the test
    const ImagePreflight result = preflight_in_image(sglang_plan(), dir.path(), runner);
    CHECK(result.result == ImagePreflight::Result::not_checked);
    CHECK(result.text == "the launch script runs no preflight");
}
