#include "card/cluster.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/home.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

using namespace harness;
using harness::test::ScopedEnv;
using harness::test::TempDir;

TEST_CASE("every shipped cluster profile is valid") {
    const auto names = list_clusters(harness_home() / "clusters");
    CHECK(names == std::vector<std::string>{"local", "perlmutter", "slurm-local", "slurm-multi", "tpu-v6e"});
    for (const auto& name : names) {
        CAPTURE(name);
        const Diagnostics diagnostics = ClusterProfile::check(harness_home() / "clusters" / (name + ".yaml"), nullptr);
        CHECK(diagnostics.items().empty());
    }
    const ClusterProfile perlmutter = ClusterProfile::load(harness_home() / "clusters", "perlmutter");
    CHECK(perlmutter.accelerators_per_node == 4);
    CHECK(perlmutter.accepts_model("NVIDIA_A100"));
    CHECK_FALSE(perlmutter.accepts_model("tpu_v6e"));
}

TEST_CASE("a broken profile reports its problems") {
    TempDir dir;
    const auto file = dir.write("bad.yaml", "name: other\nscheduler: pbs\naccelerator:\n  type: GPU\n  models: [a]\n  per_node: 0\n"
                                            "tpu:\n  slices: [8, x]\n");
    const std::string text = ClusterProfile::check(file, nullptr).format();
    CHECK(text.find("scheduler: expected one of slurm, tpu-vm, gke, local, got \"pbs\"") != std::string::npos);
    CHECK(text.find("accelerator.per_node: expected a positive integer, got \"0\"") != std::string::npos);
}

namespace {
std::string local_profile_named(const std::string& name) {
    std::ifstream in(harness_home() / "clusters" / "local.yaml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("name: local\n");
    REQUIRE(at != std::string::npos);
    return text.replace(at, 12, "name: " + name + "\n");
}

} // namespace

TEST_CASE("--cluster NAME finds user profiles before the shipped ones") {
    TempDir config;
    const ScopedEnv xdg("XDG_CONFIG_HOME", config.path().c_str());
    const fs::path user_dir = config.path() / "ccl-harness" / "clusters";
    CHECK(user_clusters_dir() == user_dir);
    REQUIRE(cluster_search_path(harness_home()) == std::vector<fs::path>{user_dir, harness_home() / "clusters"});

    SECTION("a new name") {
        const fs::path file = config.write("ccl-harness/clusters/mybox.yaml", local_profile_named("mybox"));
        const ClusterProfile profile = ClusterProfile::find("mybox", harness_home());
        CHECK(profile.name == "mybox");
        CHECK(profile.source == file);
        CHECK(profile.found == ProfileSource::user);
        CHECK(profile.shadows.empty());
        CHECK(profile.templates == "mybox");
        const ClusterProfile shipped = ClusterProfile::find("perlmutter", harness_home());
        CHECK(shipped.found == ProfileSource::shipped);
        CHECK(shipped.source == harness_home() / "clusters" / "perlmutter.yaml");
    }
    SECTION("the name of a shipped profile: the user's wins and says what it hides") {
        const fs::path file = config.write("ccl-harness/clusters/local.yaml", local_profile_named("local") + "hf_home: /mine\n");
        const ClusterProfile profile = ClusterProfile::find("local", harness_home());
        CHECK(profile.source == file);
        CHECK(profile.hf_home == "/mine");
        CHECK(profile.found == ProfileSource::user);
        CHECK(profile.shadows == harness_home() / "clusters" / "local.yaml");
        const auto entries = find_clusters(harness_home());
        const auto local = std::find_if(entries.begin(), entries.end(), [](const ClusterEntry& e) { return e.name == "local"; });
        REQUIRE(local != entries.end());
        CHECK(local->found == ProfileSource::user);
        CHECK(local->shadows == harness_home() / "clusters" / "local.yaml");
    }
    SECTION("templates: renders with a shipped target's templates") {
        config.write("ccl-harness/clusters/mybox.yaml", local_profile_named("mybox") + "templates: local\n");
        CHECK(ClusterProfile::find("mybox", harness_home()).templates == "local");
    }
    SECTION("a broken user profile is an input error with file:line") {
        config.write("ccl-harness/clusters/broken.yaml", "name: broken\nscheduler: pbs\n");
        try {
            ClusterProfile::find("broken", harness_home());
            FAIL("no error");
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            CHECK_THAT(std::string(error.what()),
                       Catch::Contains((user_dir / "broken.yaml").string() + ":2:12: scheduler: expected one of"));
        }
    }
    SECTION("an unknown name lists the names of both places and the directories searched") {
        config.write("ccl-harness/clusters/mybox.yaml", local_profile_named("mybox"));
        try {
            ClusterProfile::find("mybx", harness_home());
            FAIL("no error");
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            const std::string text = error.what();
            CHECK_THAT(text, Catch::Contains("unknown cluster \"mybx\" (did you mean \"mybox\"?)"));
            CHECK_THAT(text, Catch::Contains("local, mybox, perlmutter, slurm-local, slurm-multi, tpu-v6e"));
            CHECK_THAT(text, Catch::Contains(user_dir.string()) && Catch::Contains((harness_home() / "clusters").string()));
        }
    }
}

TEST_CASE("only an absolute XDG_CONFIG_HOME counts") {
    TempDir home;
    const ScopedEnv home_env("HOME", home.path().c_str());
    {
        const ScopedEnv xdg("XDG_CONFIG_HOME", "relative/config");
        CHECK(user_clusters_dir() == home.path() / ".config" / "ccl-harness" / "clusters");
    }
    {
        const ScopedEnv xdg("XDG_CONFIG_HOME", nullptr);
        home.write(".config/ccl-harness/clusters/mybox.yaml", local_profile_named("mybox"));
        CHECK(ClusterProfile::find("mybox", harness_home()).found == ProfileSource::user);
    }
}

TEST_CASE("--cluster PATH names a profile file") {
    TempDir dir;
    const fs::path file = dir.write("mine.yaml", local_profile_named("mine"));
    CHECK(is_profile_path("./mine.yaml"));
    CHECK(is_profile_path("mine.yml"));
    CHECK(is_profile_path("sub/mine"));
    CHECK_FALSE(is_profile_path("perlmutter"));

    const ClusterProfile by_path = ClusterProfile::find(file.string(), harness_home());
    CHECK(by_path.found == ProfileSource::path);
    CHECK(by_path.source == file);
    const ClusterProfile relative = ClusterProfile::find("mine.yaml", harness_home(), dir.path());
    CHECK(relative.source == dir.path() / "mine.yaml");
    CHECK(relative.name == "mine");

    SECTION("a missing file") {
        CHECK_THROWS_WITH(ClusterProfile::find((dir.path() / "nope.yaml").string(), harness_home()),
                          Catch::Contains("nope.yaml") && Catch::Contains("no such file"));
    }
    SECTION("checked like any profile, with file:line") {
        const fs::path other = dir.write("other.yaml", local_profile_named("somebody"));
        CHECK_THROWS_WITH(ClusterProfile::find(other.string(), harness_home()),
                          Catch::Contains(other.string() + ":2:7: name: must match the file name \"other\""));
    }
}

TEST_CASE("a profile that extends a shipped one states only what differs", "[cluster]") {
    TempDir dir;
    const fs::path file = dir.write("perlmutter-m1.yaml", "name: perlmutter-m1\nextends: perlmutter\ndescription: ours\n"
                                                          "slurm:\n  qos: premium\nenv:\n  NCCL_DEBUG: INFO\n");
    const ClusterProfile mine = ClusterProfile::find(file.string(), harness_home());
    const ClusterProfile shipped = ClusterProfile::load(harness_home() / "clusters", "perlmutter");
    CHECK(mine.qos == "premium");
    CHECK(mine.constraint == shipped.constraint); // inherited
    CHECK(mine.templates == "perlmutter");
    CHECK(mine.accelerators_per_node == 4);
    CHECK(mine.env.size() == shipped.env.size() + 1); // env merged key by key
    // Each value is located where it was written: ours in our file, the rest in the shipped one.
    CHECK(mine.location("slurm.qos") == file.string() + ":5:8");
    CHECK(mine.location("slurm.constraint").find((harness_home() / "clusters" / "perlmutter.yaml").string()) == 0);
    const fs::path typo = dir.write("x.yaml", "name: x\nextends: perlmuter\n");
    CHECK_THROWS_WITH(
        ClusterProfile::find(typo.string(), harness_home()),
        Catch::Contains(typo.string() + ":2:10: extends: no shipped profile \"perlmuter\" (did you mean \"perlmutter\"?)"));
}
