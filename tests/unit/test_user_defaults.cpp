// A user's defaults.yaml and sbatch's input environment fill what a card leaves unset, never more.
#include "card/card.hpp"
#include "card/user_defaults.hpp"
#include "plan/plan.hpp"
#include "plan/resolve.hpp"
#include "run/slurm_client.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/home.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace harness;
using harness::test::ScopedEnv;
using harness::test::TempDir;

namespace {

const char* const k_card = R"(version: 1
workload:
  model: {phase: training, model_family: llama-3.1-8b, precision: bf16}
  data: {batch_size: 8, seq_len: 1024}
  hardware:
    xpu_spec: {type: GPU, model: nvidia_a100, total_count: 4, count_per_node: 4}
Model-executor:
  framework: {name: torchtitan}
  model_plan_parallelization: {tp: 4, pp: 1, cp: 1, dp_replicate: 1, dp_shard: 1}
launch:
  qos: debug
)";

Resolved resolve_with(const TempDir& dir, const std::string& defaults, const std::vector<std::string>& sets = {}) {
    const fs::path card = dir.write("card.yaml", k_card);
    dir.write("defaults.yaml", defaults);
    return resolve({card, sets, "perlmutter", false, harness_home(), {}});
}

} // namespace

TEST_CASE("defaults.yaml fills what the card leaves unset and says where from", "[defaults]") {
    TempDir dir;
    const ScopedEnv file("CCL_HARNESS_DEFAULTS", (dir.path() / "defaults.yaml").c_str());
    const ScopedEnv account("SBATCH_ACCOUNT", nullptr);
    const ScopedEnv qos("SBATCH_QOS", nullptr);
    const Resolved resolved = resolve_with(dir, "launch:\n  account: m1234\n  qos: regular\n  env:\n    HF_HOME: /shared/hf\n");
    REQUIRE(resolved.plan);
    const Plan& plan = *resolved.plan;
    CHECK(plan.account == "m1234");
    CHECK(plan.origins.at("scheduler_options.account").kind == Origin::Kind::user);
    CHECK(plan.origins.at("scheduler_options.account").where == (dir.path() / "defaults.yaml").string() + ":2:12");
    // The card's own qos wins over the user's default.
    CHECK(plan.qos == "debug");
    CHECK(plan.origins.at("scheduler_options.qos").kind == Origin::Kind::card);
    // launch.env.HF_HOME is the cache the job uses, over the profile's hf_home.
    CHECK(plan.hf_home == "/shared/hf");
    CHECK(plan.origins.at("hf_home").kind == Origin::Kind::user);
}

TEST_CASE("a --set wins over defaults.yaml, and $SBATCH_ACCOUNT over defaults.yaml", "[defaults]") {
    TempDir dir;
    const ScopedEnv file("CCL_HARNESS_DEFAULTS", (dir.path() / "defaults.yaml").c_str());
    {
        const ScopedEnv account("SBATCH_ACCOUNT", "m9999");
        const Resolved resolved = resolve_with(dir, "launch:\n  account: m1234\n");
        REQUIRE(resolved.plan);
        CHECK(resolved.plan->account == "m9999");
        CHECK(resolved.plan->origins.at("scheduler_options.account").where == "$SBATCH_ACCOUNT");
    }
    const ScopedEnv account("SBATCH_ACCOUNT", nullptr);
    const Resolved resolved = resolve_with(dir, "launch:\n  account: m1234\n", {"launch.account=m42"});
    REQUIRE(resolved.plan);
    CHECK(resolved.plan->account == "m42");
    CHECK(resolved.plan->origins.at("scheduler_options.account").kind == Origin::Kind::set);
}

TEST_CASE("a bad defaults file is an error at its line; none at all is no defaults", "[defaults]") {
    TempDir dir;
    const fs::path path = dir.path() / "defaults.yaml";
    const ScopedEnv file("CCL_HARNESS_DEFAULTS", path.c_str());
    CHECK(load_user_defaults().file.empty()); // not there yet
    dir.write("defaults.yaml", "launch:\n  account: m1\nresult: /x\n");
    CHECK_THROWS_WITH(load_user_defaults(), Catch::Contains(path.string() + ":3:1: result: unknown key in a defaults file; "
                                                                            "did you mean \"results\"?"));
    dir.write("defaults.yaml", "launch: [account]\n");
    CHECK_THROWS_WITH(load_user_defaults(), Catch::Contains(":1:9: launch: expected a mapping"));
    dir.write("defaults.yaml", "launch: {account: [\n");
    CHECK_THROWS_AS(load_user_defaults(), HarnessError);
    // An unknown launch key reaches the card's own check, at the defaults file's line.
    dir.write("defaults.yaml", "launch:\n  acount: m1\n");
    const Resolved resolved = resolve_with(dir, "launch:\n  acount: m1\n");
    CHECK(resolved.diagnostics.format().find(path.string() + ":2:11: launch.acount: unknown key") != std::string::npos);
    // results: is relative to the file.
    dir.write("defaults.yaml", "results: out\n");
    CHECK(load_user_defaults().results == dir.path() / "out");
    CHECK(resolve_with(dir, "results: out\n").plan.has_value()); // no launch: at all
    CHECK(resolve_with(dir, "").plan.has_value());               // an empty file
    const ScopedEnv none("CCL_HARNESS_DEFAULTS", "none");
    CHECK(user_defaults_path().empty());
}

TEST_CASE("fill never replaces a value and stops at a scalar in the path", "[defaults]") {
    YamlDocument doc = YamlDocument::parse("launch:\n  account: mine\n  env: x\n", "card.yaml");
    CHECK_FALSE(doc.fill("launch.account", YAML::Node("theirs"), "d:1:1"));
    CHECK_FALSE(doc.fill("launch.env.HF_HOME", YAML::Node("/x"), "d:1:1"));
    CHECK(doc.fill("launch.qos", YAML::Node("regular"), "d:2:3"));
    CHECK(doc.filled("launch.qos"));
    CHECK_FALSE(doc.filled("launch.account"));
    CHECK(doc.location(find_node(doc.root(), "launch.qos"), "launch.qos") == "d:2:3");
    CHECK(scalar_text(find_node(doc.root(), "launch.account")) == "mine");
}

TEST_CASE("a workload is named by --name, else a card.yaml by its directory", "[defaults]") {
    CHECK(workload_name_problem("qwen3-4b_tp4.v2").empty());
    CHECK_FALSE(workload_name_problem("").empty());
    CHECK_FALSE(workload_name_problem("-rf").empty());
    CHECK_FALSE(workload_name_problem("a/b").empty());
    CHECK_FALSE(workload_name_problem(std::string(65, 'a')).empty());
    CHECK(row_name("trace_collection/llama-8b-row/card.yaml") == "llama-8b-row");
    CHECK(row_name("trace_collection/llama-8b-row/llama-8b-row.yaml").empty());
    CHECK(row_name("weird dir/card.yaml").empty()); // not a usable name: the stem stays
}

TEST_CASE("sbatch never sees the $SBATCH_* variables the plan has read", "[defaults]") {
    // sbatch lets them beat #SBATCH lines: a card's own qos would lose to the shell's.
    const ScopedEnv qos("SBATCH_QOS", "debug");
    const ScopedEnv reservation("SBATCH_RESERVATION", "mine");
    ClusterProfile cluster;
    cluster.slurm_conf = "/etc/slurm/x.conf";
    const Environment env = slurm_client_environment(cluster);
    const auto has = [&](const std::string& key) {
        return std::any_of(env.begin(), env.end(), [&](const auto& entry) { return entry.first == key; });
    };
    CHECK_FALSE(has("SBATCH_QOS"));
    CHECK(has("SBATCH_RESERVATION")); // not one the plan reads: sbatch's to use
    CHECK(has("SLURM_CONF"));
}
