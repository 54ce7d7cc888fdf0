#include "card/cluster.hpp"
#include "card_fixture.hpp"
#include "plan/plan.hpp"
#include "plan/resolve.hpp"
#include "run/executor.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

using namespace harness;
using harness::test::TempDir;

namespace {

std::string read_text(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

const char* const k_profile_head = "name: mine\nscheduler: slurm\naccelerator:\n  type: GPU\n  models: [nvidia_a100]\n  per_node: 4\n";

} // namespace

TEST_CASE("a scheduler prints as the profile spells it and parses back", "[resolve]") {
    for (const Scheduler scheduler : {Scheduler::local, Scheduler::slurm, Scheduler::tpu_vm, Scheduler::gke}) {
        CAPTURE(to_string(scheduler));
        CHECK(parse_scheduler(to_string(scheduler)) == scheduler);
    }
    CHECK(std::string(to_string(Scheduler::tpu_vm)) == "tpu-vm");
    CHECK_FALSE(parse_scheduler("tpu_vm").has_value());
    CHECK_FALSE(parse_scheduler("pbs").has_value());
    CHECK(scheduler_names() == std::vector<std::string>{"local", "slurm", "tpu-vm", "gke"});
    CHECK(is_tpu(Scheduler::gke));
    CHECK_FALSE(is_tpu(Scheduler::slurm));
}

TEST_CASE("an unknown scheduler names the profile file and line", "[resolve]") {
    TempDir dir;
    const fs::path file = dir.write("mine.yaml",
                                    "name: mine\nscheduler: pbs\naccelerator:\n  type: GPU\n  models: [a]\n  per_node: 1\n");
    CHECK_THROWS_WITH(ClusterProfile::find(file.string(), harness_home()),
                      Catch::Contains(file.string() + ":2:12: scheduler: expected one of slurm, tpu-vm, gke, local"));
    // The schema's choices are case-insensitive; the enum follows them.
    const fs::path upper = dir.write("upper.yaml",
                                     "name: upper\nscheduler: Slurm\naccelerator:\n  type: GPU\n  models: [a]\n  per_node: 1\n");
    CHECK(ClusterProfile::find(upper.string(), harness_home()).scheduler == Scheduler::slurm);
}

TEST_CASE("resolve gives the plan render writes for every reference card", "[resolve]") {
    const fs::path home = harness_home();
    for (const char* name : {"tiny-ddp", "qwen3-4b-torchtitan-perlmutter", "qwen3-4b-vllm-tpu-v6e"}) {
        CAPTURE(name);
        const fs::path card = home / "workloads" / name / (std::string(name) + ".yaml");
        const Resolved resolved = resolve({card, {}, "", false, home});
        REQUIRE(resolved.ok());
        // The plan.json the old prelude (load, resolve_cluster, make_plan) gives, byte for byte.
        const WorkloadCard old_card = WorkloadCard::load(card);
        Diagnostics diagnostics = old_card.diagnostics();
        const ClusterProfile profile = resolve_cluster(old_card, "", home);
        const Plan plan = make_plan(old_card, profile, false, diagnostics);
        CHECK(plan_to_json(*resolved.plan).dump() == plan_to_json(plan).dump());
        CHECK(resolved.target == profile.name);
        CHECK(resolved.diagnostics.format() == diagnostics.format());
    }
}

TEST_CASE("resolve stops at a card with errors", "[resolve]") {
    TempDir dir;
    const fs::path card = dir.write("broken.yaml", "description: no workload\n");
    const Resolved resolved = resolve({card, {}, "", true, harness_home()});
    CHECK_FALSE(resolved.ok());
    CHECK_FALSE(resolved.plan.has_value());
    CHECK_FALSE(resolved.profile.has_value());
    CHECK(resolved.diagnostics.has_errors());
}

TEST_CASE("the accelerator -> cluster rule is the profiles' default_for", "[resolve]") {
    const fs::path home = harness_home();
    const ClusterProfile perlmutter = ClusterProfile::load(home / "clusters", "perlmutter");
    CHECK(perlmutter.is_default_for("nvidia_a100_80gb"));
    CHECK_FALSE(perlmutter.is_default_for("tpu_v6e"));
    CHECK_FALSE(ClusterProfile::load(home / "clusters", "slurm-local").is_default_for("cpu"));

    // A site of one's own: the rule follows its profiles, not a table in the code.
    TempDir dir;
    dir.write("clusters/mine.yaml", std::string(k_profile_head) + "  default_for: [nvidia_h100*]\n");
    const WorkloadCard card = WorkloadCard::from_document(
        YamlDocument::parse(test::card_with("model: nvidia_a100", "model: nvidia_h100_sxm"), "card.yaml"));
    CHECK(infer_target(card, dir.path() / "clusters") == "mine");
    dir.write("clusters/other.yaml", "name: other\nscheduler: slurm\naccelerator:\n  type: GPU\n  models: [nvidia_h100]\n"
                                     "  per_node: 4\n  default_for: [nvidia_h100_sxm]\n");
    CHECK_THROWS_WITH(infer_target(card, dir.path() / "clusters"), Catch::Contains("clusters mine, other all list"));
}

TEST_CASE("only a profile with requires_account demands launch.account", "[resolve]") {
    const fs::path home = harness_home();
    const fs::path card = home / "workloads" / "qwen3-4b-torchtitan-perlmutter" / "qwen3-4b-torchtitan-perlmutter.yaml";
    const std::vector<std::string> no_account{"launch.account="};
    TempDir dir;
    // Perlmutter's templates, but a site that takes jobs without an account.
    std::string profile = read_text(home / "clusters" / "perlmutter.yaml");
    const std::string flag = "  requires_account: true\n";
    REQUIRE(profile.find(flag) != std::string::npos);
    const fs::path with = dir.write("with.yaml", std::string(profile).replace(profile.find("name: perlmutter"), 16, "name: with"));
    profile.replace(profile.find(flag), flag.size(), "");
    profile.replace(profile.find("name: perlmutter"), 16, "name: without\ntemplates: perlmutter");
    const fs::path without = dir.write("without.yaml", profile);

    const Resolved strict_with = resolve({card, no_account, with.string(), true, home});
    CHECK_THAT(strict_with.diagnostics.format(), Catch::Contains("With jobs need an allocation account (sbatch -A)"));
    const Resolved strict_without = resolve({card, no_account, without.string(), true, home});
    CHECK_THAT(strict_without.diagnostics.format(), !Catch::Contains("allocation account"));
    const Resolved shipped = resolve({card, no_account, "perlmutter", true, home});
    CHECK_THAT(shipped.diagnostics.format(),
               Catch::Contains("Perlmutter jobs need an allocation account (sbatch -A); set launch.account"));
}

TEST_CASE("every scheduler has its executor in the registry", "[resolve]") {
    for (const Scheduler scheduler : {Scheduler::local, Scheduler::slurm, Scheduler::tpu_vm, Scheduler::gke}) {
        CAPTURE(to_string(scheduler));
        CHECK(executor_for(scheduler).scheduler == scheduler);
    }
    CHECK(executor_for(Scheduler::local).execute == &execute_local);
    CHECK(executor_for(Scheduler::slurm).execute == &execute_slurm);
    CHECK(executor_for(Scheduler::tpu_vm).execute == &execute_tpu);
    CHECK(executor_for(Scheduler::gke).execute == &execute_tpu);
}
