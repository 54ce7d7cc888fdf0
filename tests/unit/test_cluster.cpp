#include "cluster.hpp"
#include "home.hpp"
#include "test_context.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

TEST_CASE("every shipped cluster profile is valid") {
    const auto names = list_clusters(harness_home() / "clusters");
    CHECK(names == std::vector<std::string>{"local", "perlmutter", "slurm-local", "tpu-v6e"});
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
