#include "card_fixture.hpp"
#include "render/render.hpp"
#include "render/render_key.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

using namespace harness;
using harness::test::card_with;
using harness::test::k_card;
using harness::test::TempDir;

namespace {

RenderedRun render_text(const std::string& text, const std::string& target, const TempDir& dir) {
    const WorkloadCard card = WorkloadCard::load(dir.write("card.yaml", text));
    REQUIRE_FALSE(card.diagnostics().has_errors());
    const ClusterProfile cluster = ClusterProfile::load(harness_home() / "clusters", target);
    Diagnostics diagnostics;
    const Plan plan = make_plan(card, cluster, false, diagnostics);
    return render_run(card, cluster, plan, harness_home());
}

} // namespace

TEST_CASE("the escaper follows the output file's language") {
    CHECK(escaper_for("launch.sbatch") == "shell");
    CHECK(escaper_for("remote.sh") == "shell");
    CHECK(escaper_for("train.toml") == "toml");
    CHECK(escaper_for("jobset.yaml") == "json");
    CHECK(escaper_for("Containerfile") == "token");
}

TEST_CASE("rendering the same card twice gives identical files") {
    TempDir dir;
    const RenderedRun a = render_text(k_card, "perlmutter", dir);
    const RenderedRun b = render_text(k_card, "perlmutter", dir);
    REQUIRE(a.files.size() == b.files.size());
    for (std::size_t i = 0; i < a.files.size(); ++i) {
        CHECK(a.files[i].name == b.files[i].name);
        CHECK(a.files[i].content == b.files[i].content);
    }
    CHECK(a.find("plan.json") != nullptr);
    CHECK(a.find("env.sh") != nullptr);
    CHECK(a.find("card.yaml") != nullptr);
}

TEST_CASE("a framework without templates names what exists") {
    TempDir dir;
    CHECK_THROWS_WITH(render_text(card_with("name: torchtitan", "name: deepspeed"), "perlmutter", dir),
                      Catch::Contains("no template for framework \"deepspeed\" on target \"perlmutter\"; templates exist for: ") &&
                          Catch::Contains("torch-ddp/local"));
}

TEST_CASE("hostile env values are quoted in env.sh") {
    TempDir dir;
    const RenderedRun run = render_text(card_with("NCCL_DEBUG: INFO", "NCCL_DEBUG: \"$(touch /tmp/x) `id` it's\""), "perlmutter", dir);
    const RenderedFile* env = run.find("env.sh");
    REQUIRE(env != nullptr);
    CHECK(env->content.find("export NCCL_DEBUG=\"\\$(touch /tmp/x) \\`id\\` it's\"\n") != std::string::npos);
}

TEST_CASE("values that cannot go on an #SBATCH line are refused") {
    TempDir dir;
    CHECK_THROWS_WITH(render_text(card_with("account: m4999", "account: \"m4999 --wrap=id\""), "perlmutter", dir),
                      Catch::Contains("launch.account") && Catch::Contains("cannot go on an #SBATCH line"));
}

TEST_CASE("the render key is the same over the files in memory and as written, and changes with them") {
    TempDir dir;
    const RenderedRun run = render_text(k_card, "perlmutter", dir);
    const std::string key = render_key(run);
    CHECK(key.size() == 64);
    CHECK(render_key(render_text(k_card, "perlmutter", dir)) == key);
    const auto out = dir.path() / "rendered";
    write_rendered(run, out);
    CHECK(render_key_of_directory(out) == key);
    // What a job writes under rendered/logs is not part of the render.
    dir.write("rendered/logs/rank_0.log", "step 1\n");
    CHECK(render_key_of_directory(out) == key);
    // One byte of one file is another run.
    dir.write("rendered/env.sh", run.find("env.sh")->content + "#");
    CHECK(render_key_of_directory(out) != key);
    CHECK(render_key_of_directory(dir.path() / "missing").empty());
}

TEST_CASE("write_rendered replaces an earlier render and refuses other directories") {
    TempDir dir;
    const RenderedRun run = render_text(k_card, "perlmutter", dir);
    const auto out = dir.path() / "out";
    write_rendered(run, out);
    CHECK(fs::is_regular_file(out / "plan.json"));
    dir.write("out/stale.txt", "old");
    write_rendered(run, out);
    CHECK_FALSE(fs::exists(out / "stale.txt"));

    dir.write("precious/notes.txt", "keep me");
    CHECK_THROWS_WITH(write_rendered(run, dir.path() / "precious"), Catch::Contains("refusing to replace it"));
    CHECK(fs::is_regular_file(dir.path() / "precious" / "notes.txt"));

    dir.write("a-file", "x");
    CHECK_THROWS_AS(write_rendered(run, dir.path() / "a-file"), HarnessError);
}

TEST_CASE("an unwritable --out is an error that leaves nothing behind") {
    if (::geteuid() == 0) {
        // root ignores directory permissions; use a path under a regular file instead.
        TempDir dir;
        const RenderedRun run = render_text(k_card, "perlmutter", dir);
        dir.write("file", "x");
        CHECK_THROWS_AS(write_rendered(run, dir.path() / "file" / "out"), HarnessError);
        return;
    }
    TempDir dir;
    const RenderedRun run = render_text(k_card, "perlmutter", dir);
    fs::create_directories(dir.path() / "locked");
    ::chmod((dir.path() / "locked").c_str(), 0500);
    CHECK_THROWS_AS(write_rendered(run, dir.path() / "locked" / "out"), HarnessError);
    ::chmod((dir.path() / "locked").c_str(), 0700);
    CHECK(fs::is_empty(dir.path() / "locked"));
}
