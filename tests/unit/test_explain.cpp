#include "card_fixture.hpp"
#include "plan/explain.hpp"
#include "util/home.hpp"
#include "util/strings.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>

using namespace harness;
using harness::test::card_with;
using harness::test::k_card;

namespace {

ClusterProfile cluster(const std::string& name) { return ClusterProfile::load(harness_home() / "clusters", name); }

Plan plan_of(YamlDocument doc, const std::string& target = "perlmutter") {
    const WorkloadCard card = WorkloadCard::from_document(std::move(doc));
    REQUIRE_FALSE(card.diagnostics().has_errors());
    Diagnostics diagnostics;
    return make_plan(card, cluster(target), false, diagnostics);
}

Plan plan_of(const std::string& text, const std::string& target = "perlmutter") {
    return plan_of(YamlDocument::parse(text, "card.yaml"), target);
}

/// "card.yaml:L:C" of the first line of `text` that holds `needle`, C pointing at the value.
std::string position_of(const std::string& text, const std::string& needle) {
    const auto lines = split(text, '\n');
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto at = lines[i].find(needle);
        if (at != std::string::npos) {
            return fmt::format("card.yaml:{}:{}", i + 1, at + needle.size() + 1);
        }
    }
    FAIL("no line holds " << needle);
    return {};
}

std::size_t line_of(const fs::path& file, const std::string& needle) {
    std::ifstream in(file);
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        if (line.find(needle) != std::string::npos) {
            return number;
        }
    }
    FAIL("no line of " << file << " holds " << needle);
    return 0;
}

const Origin& origin(const Plan& plan, const std::string& field) {
    const auto found = plan.origins.find(field);
    INFO(field);
    REQUIRE(found != plan.origins.end());
    return found->second;
}

} // namespace

TEST_CASE("a value written in the card points at its line and column") {
    const Plan plan = plan_of(k_card);
    const Origin& tp = origin(plan, "parallelism.tp");
    CHECK(tp.kind == Origin::Kind::card);
    CHECK(tp.where == position_of(k_card, "    tp: "));
    CHECK(tp.detail == "Model-executor.model_plan_parallelization.tp");
    const Origin& nccl = origin(plan, "env.NCCL_DEBUG");
    CHECK(nccl.kind == Origin::Kind::card);
    CHECK(nccl.detail == "Model-executor.communication_library.env.NCCL_DEBUG");
}

TEST_CASE("a --set value names the flag") {
    YamlDocument doc = YamlDocument::parse(k_card, "card.yaml");
    doc.set("launch.steps=30");
    const Plan plan = plan_of(std::move(doc));
    CHECK(plan.steps == 30);
    const Origin& steps = origin(plan, "steps");
    CHECK(steps.kind == Origin::Kind::set);
    CHECK(steps.where == "--set launch.steps=30");
    CHECK(steps.detail == "launch.steps");
}

TEST_CASE("a profile value points at the profile's key") {
    const Plan plan = plan_of(k_card);
    const ClusterProfile perlmutter = cluster("perlmutter");
    const Origin& qos = origin(plan, "scheduler_options.qos");
    CHECK(qos.kind == Origin::Kind::profile);
    CHECK(qos.detail == "slurm.qos");
    CHECK(starts_with(qos.where, perlmutter.source.string() + ":"));
    CHECK(qos.where == perlmutter.location("slurm.qos"));
    const Origin& net = origin(plan, "env.NCCL_SOCKET_IFNAME");
    CHECK(net.kind == Origin::Kind::profile);
    CHECK(net.detail == "env.NCCL_SOCKET_IFNAME");
    CHECK(net.where == fmt::format("{}:{}:23", perlmutter.source.string(), line_of(perlmutter.source, "NCCL_SOCKET_IFNAME:")));
    SECTION("the card wins over the profile, and says so") {
        const Plan with_qos = plan_of(std::string(k_card) + "  qos: debug\n");
        CHECK(with_qos.qos == "debug");
        CHECK(origin(with_qos, "scheduler_options.qos").kind == Origin::Kind::card);
    }
}

TEST_CASE("a harness default names its rule") {
    const Plan plan = plan_of(card_with("    precision: bf16\n", ""));
    CHECK(plan.precision == "bf16");
    const Origin& precision = origin(plan, "precision");
    CHECK(precision.kind == Origin::Kind::default_rule);
    CHECK(precision.detail.find("bf16") != std::string::npos);
    CHECK(origin(plan, "profile.wait").kind == Origin::Kind::default_rule);
    CHECK(origin(plan, "parallelism.ep").kind == Origin::Kind::default_rule);
    // The card gives precision: the same value, a different origin.
    CHECK(origin(plan_of(k_card), "precision").kind == Origin::Kind::card);
}

TEST_CASE("a derived value says what it is derived from") {
    const Plan plan = plan_of(k_card);
    const Origin& world = origin(plan, "geometry.world_size");
    CHECK(world.kind == Origin::Kind::derived);
    CHECK(world.detail.find("nodes 4 x ranks_per_node 4") != std::string::npos);
    const Origin& nodes = origin(plan, "geometry.nodes");
    CHECK(nodes.kind == Origin::Kind::derived);
    CHECK(nodes.detail.find("total_count 16 / count_per_node 4") != std::string::npos);
    const Origin& steps = origin(plan, "steps");
    CHECK(steps.kind == Origin::Kind::derived);
    CHECK(steps.detail.find("iteration 20") != std::string::npos);
    CHECK(origin(plan, "geometry.ranks_per_node").kind == Origin::Kind::card);
}

TEST_CASE("every plan.json value has the origin make_plan recorded") {
    SECTION("perlmutter") {
        for (const auto& value : explain_plan(plan_of(k_card))) {
            INFO(value.field);
            CHECK(value.origin.detail.find("after planning") == std::string::npos);
        }
    }
    SECTION("tpu-v6e") {
        const std::string tpu = card_with("      model: nvidia_a100\n      total_count: 16\n      count_per_node: 4\n",
                                          "      model: tpu_v6e\n      total_count: 8\n      count_per_node: 8\n") +
                                "  tpu:\n    project: p\n";
        const auto values = explain_plan(plan_of(tpu, "tpu-v6e"));
        CHECK(std::any_of(values.begin(), values.end(), [](const ExplainedValue& v) { return v.field == "tpu.hosts"; }));
        for (const auto& value : values) {
            INFO(value.field);
            CHECK(value.origin.detail.find("after planning") == std::string::npos);
        }
    }
    SECTION("values come in reading order, with plan.json's values") {
        const Plan plan = plan_of(k_card);
        const auto values = explain_plan(plan);
        REQUIRE(values.size() > 30);
        CHECK(values.front().field == "card");
        const auto world = std::find_if(values.begin(), values.end(),
                                        [](const ExplainedValue& v) { return v.field == "geometry.world_size"; });
        REQUIRE(world != values.end());
        CHECK(world->value.as_int() == 16);
    }
}
